// The report's tables: a click on a column heading sorts by it (again: the other way), a box above each
// table keeps the rows holding its text; each table links its CSV file and each chart its static SVG (beside
// the page in the lake's folder, or under the report's route in the Benchmarks view). No library: a few lines.
(function () {
  "use strict";
  function cellValue(td) {
    const first = (td.firstChild && td.firstChild.nodeType === 3 ? td.firstChild.nodeValue : td.textContent).trim();
    const number = Number(first.replace(/[,+%\s]/g, ""));
    return first !== "" && Number.isFinite(number) ? number : first.toLowerCase();
  }
  function sortBy(table, index, th) {
    const body = table.tBodies[0];
    const ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach((h) => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const rows = Array.from(body.rows);
    rows.sort((a, b) => {
      const x = cellValue(a.cells[index]), y = cellValue(b.cells[index]);
      if (x === "" || y === "") return x === "" ? 1 : -1; // blanks last, either way
      const order = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1);
      return ascending ? order : -order;
    });
    rows.forEach((r) => body.appendChild(r));
  }
  function fileHref(name) {
    const path = window.location.pathname;
    return path.endsWith(".html") ? name : path.replace(/\/$/, "") + "/" + name;
  }
  document.querySelectorAll("a[data-file]").forEach((a) => { a.href = fileHref(a.dataset.file); });
  document.querySelectorAll("table[id]").forEach((table) => {
    const box = table.parentElement;
    if (!table.tBodies.length || !box) return;
    table.querySelectorAll("thead th").forEach((th, i) => {
      th.addEventListener("click", () => sortBy(table, i, th));
    });
    const tools = document.createElement("div");
    tools.className = "tools";
    const input = document.createElement("input");
    input.type = "search";
    input.placeholder = "Filter rows";
    input.setAttribute("aria-label", "Filter the rows of " + table.id);
    input.addEventListener("input", () => {
      const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      Array.from(table.tBodies[0].rows).forEach((r) => {
        const text = r.textContent.toLowerCase();
        r.hidden = !words.every((w) => text.includes(w));
      });
    });
    tools.appendChild(input);
    const csv = box.dataset.csv;
    if (csv) {
      const link = document.createElement("a");
      link.href = fileHref(csv);
      link.download = csv;
      link.textContent = "Download CSV";
      tools.appendChild(link);
    }
    box.parentElement.insertBefore(tools, box);
  });
})();
