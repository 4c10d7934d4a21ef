// Render the formulas arithmatex marked ($…$, $$…$$ in the Markdown) with the KaTeX the
// site carries (assets/katex/, copied by docs/hooks/mathembed_docs.py): no CDN.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    var text = element.textContent.trim();
    var display = text.startsWith("\\[");
    katex.render(text.slice(2, -2), element, { displayMode: display, throwOnError: false });
  });
});
