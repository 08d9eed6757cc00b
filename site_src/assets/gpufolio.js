// gpufolio: a wide table or chart scrolls sideways on a phone. Each such scroll area gets keyboard focus and a
// name, so it can be scrolled without a pointer (axe: scrollable-region-focusable). Material's document$ fires on
// every page view, instant navigation included.
document$.subscribe(function () {
  document.querySelectorAll(".md-typeset__scrollwrap, .md-typeset p.gf-chart").forEach(function (el) {
    if (el.scrollWidth > el.clientWidth + 1) {
      el.tabIndex = 0;
      el.setAttribute("role", "region");
      el.setAttribute("aria-label", el.matches("p") ? "chart, scrolls sideways" : "table, scrolls sideways");
    }
  });
});
