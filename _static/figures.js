/* Phones (issue: figures legible at 390 px): a figure wider than the column is not shrunk to it, which would
   take its smallest text (10 pt at 100 dpi: 13.9 px) below 9 CSS px; it is shown at FIGURE_MIN_SCALE of its
   natural width at least, and its output box scrolls sideways instead of the page. Wider screens, or a figure
   that fits, keep the theme's own sizing. Jupyter Book links every .js file of _static/ on every page. */
(function () {
  "use strict";
  var FIGURE_MIN_SCALE = 0.65;
  var PHONE = 720;  /* the widest screen iobench.css treats as a phone */

  function fit(img) {
    var box = img.parentElement;
    if (!box || !img.naturalWidth) {
      return;
    }
    var least = Math.round(img.naturalWidth * FIGURE_MIN_SCALE);
    if (window.innerWidth <= PHONE && least > box.clientWidth) {
      img.style.maxWidth = "none";
      img.style.width = least + "px";
      box.classList.add("iobench-figure-scroll");
    } else {
      img.style.maxWidth = "";
      img.style.width = "";
      box.classList.remove("iobench-figure-scroll");
    }
  }

  function fitAll() {
    document.querySelectorAll(".bd-article .cell_output > img").forEach(function (img) {
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
