/* Phones (issue: figures legible at 390 px): a figure wider than the column is not shrunk to it, which would
   take its smallest text (10 pt at 100 dpi: 13.9 px) below 9 CSS px; it is shown at FIGURE_MIN_SCALE of its
   natural width at least, and its output box scrolls sideways instead of the page. Wider screens, or a figure
   that fits, keep the theme's own sizing. Jupyter Book links every .js file of _static/ on every page. */
(function () {
  "use strict";
  var FIGURE_MIN_SCALE = 0.65;
  var PHONE = 720;  /* the widest screen iobench.css treats as a phone */

  /* a figure's own width in CSS px: a retina PNG has twice as many pixels, and the book gives its <img> the
     figure's own size in its style (myst-nb, from the output's metadata); kept once, before fit() changes it */
  function ownWidth(img) {
    if (!img.dataset.ownWidth) {
      img.dataset.ownWidth = String(parseFloat(img.style.width) || img.naturalWidth);
    }
    return parseFloat(img.dataset.ownWidth);
  }

  function fit(img) {
    /* its output's box (a figure given its own size is wrapped in a link to the full image) */
    var box = img.closest(".cell_output, figure") || img.parentElement;
    if (!box || !img.naturalWidth) {
      return;
    }
    var own = ownWidth(img);
    var least = Math.round(own * FIGURE_MIN_SCALE);
    img.style.height = "auto";  /* its width alone sets its size: never stretched */
    if (window.innerWidth <= PHONE && least > box.clientWidth) {
      img.style.maxWidth = "none";
      img.style.width = least + "px";
      box.classList.add("iobench-figure-scroll");
    } else {
      img.style.maxWidth = "";
      img.style.width = own + "px";
      box.classList.remove("iobench-figure-scroll");
    }
  }

  function fitAll() {
    var figures = ".bd-article .cell_output img, .bd-article img.iobench-figure";  /* a chapter's; the front page's */
    document.querySelectorAll(figures).forEach(function (img) {
      if (img.complete) {
        fit(img);
      } else {
        img.addEventListener("load", function () { fit(img); }, {once: true});
      }
    });
  }

  window.addEventListener("DOMContentLoaded", fitAll);
  window.addEventListener("resize", fitAll);
})();
