// The HTML audit report's behaviour (read by audit/report.py at run time and inlined: the page stays one file).
// The page reads without it: the gate, the hosts to act on with their fixes and the host table are static
// HTML. This script filters and sorts the table, copies a fix's commands and opens a host's details
// (#h-<host>) from the data block (long texts stored once).
'use strict';
const PAGE = Number(document.getElementById('hosts').dataset.page);
const q = document.getElementById('q'), f = document.getElementById('f'), tb = document.querySelector('#hosts tbody');
const rows = Array.from(tb.rows), text = rows.map(r => r.textContent.toLowerCase() + ' ' + r.dataset.codes);
const shown = document.getElementById('shown'), more = document.getElementById('more');
let code = '', limit = PAGE;
function apply() {
  const t = q.value.trim().toLowerCase(), v = f.value; let n = 0;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    const ok = (!t || text[i].includes(t)) && (!v || r.dataset.verdict === v) &&
               (!code || (' ' + r.dataset.codes + ' ').includes(' ' + code + ' '));
    const hide = !ok || n >= limit;          // only the first `limit` matches are laid out
    if (r.hidden !== hide) r.hidden = hide;
    if (ok) n++;
  }
  shown.textContent = Math.min(n, limit) + (n > limit ? ' of ' + n : '');
  more.hidden = n <= limit;
  document.getElementById('code').textContent = code ? 'code ' + code + ' \u00d7' : '';
}
more.addEventListener('click', () => { limit = Infinity; apply(); });
q.addEventListener('input', apply); f.addEventListener('change', apply);
document.getElementById('code').addEventListener('click', () => { code = ''; apply(); });
document.querySelectorAll('button.f[data-code]').forEach(b => b.addEventListener('click', () => {
  code = b.dataset.code; apply(); document.getElementById('hosts').scrollIntoView();
}));
const coll = new Intl.Collator(undefined, {numeric: true});
document.querySelectorAll('#hosts th').forEach((th, i) => th.addEventListener('click', () => {
  const dir = th.dataset.dir = th.dataset.dir === 'asc' ? 'desc' : 'asc', s = dir === 'asc' ? 1 : -1;
  const keyed = rows.map((r, j) => [r.cells[i].dataset.k || r.cells[i].textContent, r, text[j]]);
  keyed.sort((a, b) => s * coll.compare(a[0], b[0]));
  keyed.forEach((k, j) => { rows[j] = k[1]; text[j] = k[2]; });
  const frag = document.createDocumentFragment(); rows.forEach(r => frag.appendChild(r)); tb.appendChild(frag);
}));
// Copy: the commands are selected (what the reader sees copied, and what Ctrl+C takes where the page may
// not write the clipboard), then written to the clipboard.
function copy(b) {
  const block = b.closest('.fix').querySelector('pre code'), sel = window.getSelection(), range = document.createRange();
  range.selectNodeContents(block); sel.removeAllRanges(); sel.addRange(range);
  const done = () => { b.textContent = 'copied'; }, fallback = () => {
    try { if (document.execCommand('copy')) { done(); return; } } catch (e) { /* no clipboard: selected */ }
    b.textContent = 'selected: Ctrl+C';
  };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(block.textContent).then(done, fallback);
  else fallback();
}
document.addEventListener('click', e => { const b = e.target.closest('button.cp'); if (b) copy(b); });
const data = JSON.parse(document.getElementById('data').textContent);
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  for (const c of kids) if (c !== null && c !== undefined) e.append(c);
  return e;
}
function fix(ref) {
  if (ref === null) return null;
  const r = data.r[ref], box = el('div', {class: 'fix'}, el('div', {class: 'fixbar'}, el('span', {}, r.label || 'Fix'),
    r.commands.length ? el('button', {class: 'cp', type: 'button', 'aria-label': 'copy the commands'}, 'copy') : null));
  for (const h of r.hints) box.append(el('p', {class: 'hint'}, h));
  if (r.commands.length) box.append(el('pre', {class: 'cmd'}, el('code', {}, r.commands.join('\n'))));
  return box;
}
function showHost(name) {
  const box = document.getElementById('detail'), h = data.hosts[name];
  if (!h) { box.hidden = true; return; }
  const kids = [el('h2', {}, name + ' \u2014 ', el('span', {class: 'v ' + h.v}, h.v))];
  const facts = el('ul', {class: 'facts'});
  for (const [label, value] of h.facts) facts.append(el('li', {}, label + ': ' + value));
  kids.push(facts);
  for (const d of h.d) {
    kids.push(el('div', {class: 'finding'},
      el('p', {}, el('span', {class: 'sev ' + d[1]}, d[1]), el('code', {}, d[0]),
         d[6] != null ? el('span', {class: 'subject'}, data.m[d[6]]) : null,
         d[5] ? el('span', {class: 'badge ' + d[5]}, d[5]) : null, ' ' + (d[2] || '')),
      el('p', {}, data.m[d[3]]), fix(d[4])));
  }
  for (const w of h.w) {
    kids.push(el('div', {class: 'finding waived'},
      el('p', {}, el('span', {class: 'badge waived'}, 'waived'), ' ', el('code', {}, w[0]),
         w[5] != null ? el('span', {class: 'subject'}, data.m[w[5]]) : null, ' ' + data.m[w[1]]),
      el('p', {}, 'Justification: ' + w[2] + ' (approved by ' + w[3] + ', expires ' + w[4] + ')')));
  }
  if (h.res.length) kids.push(el('p', {}, el('span', {class: 'badge resolved'}, 'resolved'), ' since the baseline: ' + h.res.join(', ')));
  box.replaceChildren(...kids); box.hidden = false; box.scrollIntoView();
}
function route() { if (location.hash.startsWith('#h-')) showHost(decodeURIComponent(location.hash.slice(3))); }
window.addEventListener('hashchange', route);
route(); apply();
