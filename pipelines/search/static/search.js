// The search page's formulas, typeset by KaTeX (pipelines/search/page.py says why here).
// The server escaped every passage, so the hits hold formulas as plain text; auto-render
// finds the delimited ones and replaces each by KaTeX's rendering. A formula KaTeX cannot
// read is shown as its source in red (throwOnError: false); trust stays off, so no formula
// can add a link, a class or an attribute to the page.
"use strict";

(function () {
  if (typeof renderMathInElement !== "function" || typeof katex !== "object") {
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

  // throwOnError covers KaTeX's ParseError only. Anything else KaTeX throws (a
  // RangeError: a formula of 170 characters can nest its own macros 6,000 deep)
  // auto-render rethrows, which would leave that formula and every one after it on the
  // page as raw source. auto-render calls katex.render once per formula, so wrapping it
  // confines such a failure to its formula: shown as its source, as code.
  const typeset = katex.render;
  katex.render = function (tex, element, renderOptions) {
    try {
      typeset.call(katex, tex, element, renderOptions);
    } catch (error) {
      if (error instanceof katex.ParseError) {
        throw error; // auto-render's own handling: the source, and a console line
      }
      showSource(tex, element, error);
    }
  };

  function showSource(tex, element, error) {
    const code = document.createElement("code");
    code.className = "math-source";
    code.title = "KaTeX could not typeset this formula: " + error;
    code.textContent = tex;
    element.replaceChildren(code);
    console.error("KaTeX could not typeset a formula, shown as its source:", error);
  }

  // Each hit on its own too: whatever still escapes stops that hit alone.
  for (const hit of document.querySelectorAll("li.hit")) {
    try {
      renderMathInElement(hit, options);
    } catch (error) {
      console.error("KaTeX auto-render failed on a hit, left as its source:", error);
    }
  }
})();
