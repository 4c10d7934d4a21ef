// The search page's formulas, typeset by KaTeX (pipelines/search/page.py says why here).
// The server escaped every passage, so the hits hold formulas as plain text; auto-render
// finds the delimited ones and replaces each by KaTeX's rendering. A formula KaTeX cannot
// read is shown as its source in red (throwOnError: false); trust stays off, so no formula
// can add a link, a class or an attribute to the page.
"use strict";

(function () {
  if (typeof renderMathInElement !== "function") {
    return; // KaTeX did not load: the formulas stay readable as their source
  }
  const options = {
    // Longest first: "$$" must not be read as two empty "$" formulas.
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "\\[", right: "\\]", display: true },
      { left: "\\(", right: "\\)", display: false },
      { left: "$", right: "$", display: false },
    ],
    throwOnError: false,
    strict: "ignore",
    trust: false,
    maxExpand: 1000,
  };
  for (const hit of document.querySelectorAll("li.hit")) {
    renderMathInElement(hit, options);
  }
})();
