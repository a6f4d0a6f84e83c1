// The regression page's copy button: puts the mailing-list report (the <pre>
// the button's data-copy names) on the clipboard. navigator.clipboard needs a
// secure context (https or localhost); elsewhere the text is selected and
// copied with execCommand, which every browser still honours.
"use strict";
document.querySelectorAll("button.copy[data-copy]").forEach((button) => {
  button.addEventListener("click", async () => {
    const source = document.getElementById(button.dataset.copy);
    const text = source.textContent;
    let copied = false;
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        copied = true;
      } catch (e) {
        copied = false;
      }
    }
    if (!copied) {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      copied = document.execCommand("copy");
    }
    button.textContent = copied ? "copied" : "select and copy by hand";
    button.dataset.copied = copied ? "yes" : "no";
  });
});
