"""The script the recorder adds to every page: the pick toolbar and the after-write snapshot.

It runs in the top frame of every document of the recording context, before the page's own
scripts. It does three things, none of which Playwright's recorder does for us:

* **A toolbar** (English or Chinese) with "Extract this", "Extract all like this", "Check this
  text", a name box and "Finish". A pick mode makes the next click point at an element instead
  of clicking it: the element is tagged with ``data-shopfleet-pick`` and handed to Python, which
  asks Playwright's own generator (``Locator.normalize``) for its locator.
* **Hides the toolbar from everyone else.** Its listeners sit on ``window`` in the capture phase,
  which runs before Playwright's recorder (it listens on ``document``), and stop every event
  aimed at the toolbar — and, in a pick mode, the picking click — so neither the recorder nor
  the page sees them.
* **What changed after a write.** On each click and Enter it keeps the text of every element
  with an id in ``sessionStorage``; when the next document of the same path loads, the ids
  whose text changed go to Python as candidates for the write step's ``verify``.
"""

from __future__ import annotations

import json

PICK_BINDING = "__shopfleetRecorderPick"
CHANGED_BINDING = "__shopfleetRecorderChanged"
FINISH_BINDING = "__shopfleetRecorderFinish"
GESTURE_BINDING = "__shopfleetRecorderGesture"
TOOLBAR_ID = "__shopfleet_recorder"
PICK_ATTRIBUTE = "data-shopfleet-pick"

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "title": "ShopFleet is recording",
        "extract": "Extract this",
        "extract_all": "Extract all like this",
        "assert_text": "Check this text",
        "name": "Name (optional)",
        "finish": "Finish",
        "picking": "Click the element to use (Esc cancels)",
    },
    "zh": {
        "title": "ShopFleet 正在录制",
        "extract": "提取此项",
        "extract_all": "提取所有同类",
        "assert_text": "检查此文本",
        "name": "名称（可选）",
        "finish": "完成",
        "picking": "点击要使用的元素（Esc 取消）",
    },
}

_SCRIPT = r"""
(() => {
  if (window.top !== window || window.__shopfleetRecorderInstalled) return;
  window.__shopfleetRecorderInstalled = true;
  const T = __TEXTS__;
  const TOOLBAR_ID = __TOOLBAR_ID__, PICK_ATTR = __PICK_ATTR__;
  const KEY = '__shopfleet_recorder_before';
  let mode = null, seq = 0, bar = null;

  const inBar = (node) => !!(bar && node instanceof Node && bar.contains(node));
  const textOf = (el) => ((el.innerText ?? el.textContent) || '').trim().slice(0, 2000);

  function snapshot() {
    const ids = {};
    for (const el of document.querySelectorAll('[id]')) {
      if (inBar(el) || !el.id) continue;
      ids[el.id] = textOf(el);
    }
    try {
      sessionStorage.setItem(KEY, JSON.stringify({ path: location.pathname, ids }));
    } catch (e) { /* storage off: no verify suggestion */ }
  }

  function reportChanges() {
    let before = null;
    try {
      before = JSON.parse(sessionStorage.getItem(KEY) || 'null');
      sessionStorage.removeItem(KEY);
    } catch (e) { return; }
    if (!before || before.path !== location.pathname) return;
    const changed = [];
    for (const el of document.querySelectorAll('[id]')) {
      if (inBar(el) || !el.id) continue;
      const role = el.getAttribute('role');
      if (role === 'status' || role === 'alert') continue;  // a notice, gone on the next visit
      const now = textOf(el);
      if (now && before.ids[el.id] !== now) changed.push({ id: el.id, text: now });
    }
    if (changed.length && window[__CHANGED__]) window[__CHANGED__]({ changed });
  }

  // A name for the value: the column's header in a table, else a label, else id or class.
  function hint(el) {
    const cell = el.closest('td,th');
    if (cell) {
      const table = cell.closest('table');
      const head = table && table.querySelector('thead tr, tr');
      const th = head && head.children[cell.cellIndex];
      if (th && th !== cell) return textOf(th);
    }
    return el.getAttribute('aria-label') || el.id || (el.classList[0] || '') || el.tagName;
  }

  // "All like this": Playwright generates locators for one element only, so the list form is
  // the element's tag and classes under its nearest ancestor with an id.
  function allLike(el) {
    const esc = (s) => CSS.escape(s);
    const own = el.tagName.toLowerCase() + [...el.classList].map((c) => '.' + esc(c)).join('');
    for (let a = el.parentElement; a; a = a.parentElement) {
      if (a.id) return '#' + esc(a.id) + ' ' + own;
    }
    return own;
  }

  function setMode(m) {
    mode = m;
    if (!bar) return;
    bar.querySelector('[data-sf-status]').textContent = m ? T.picking : '';
    for (const b of bar.querySelectorAll('button[data-sf-mode]')) {
      b.setAttribute('aria-pressed', String(b.dataset.sfMode === m));
      b.style.outline = b.dataset.sfMode === m ? '2px solid #fc3' : '';
    }
  }

  function pick(el) {
    const token = String(++seq) + '-' + Math.random().toString(36).slice(2);
    el.setAttribute(PICK_ATTR, token);
    const nameBox = bar.querySelector('input');
    const name = nameBox.value.trim();
    nameBox.value = '';
    const m = mode;
    setMode(null);
    window[__PICK__]({ mode: m, token, name, hint: hint(el), text: textOf(el),
                       all: m === 'extract_all' ? allLike(el) : null });
  }

  function onBarEvent(e) {
    if (e.type !== 'click') return;
    const button = e.target instanceof Element ? e.target.closest('button') : null;
    if (!button) return;
    const m = button.dataset.sfMode;
    if (m) setMode(mode === m ? null : m);
    else if (button.dataset.sfFinish !== undefined && window[__FINISH__]) window[__FINISH__]();
  }

  const EVENTS = ['click', 'auxclick', 'dblclick', 'contextmenu', 'mousedown', 'mouseup',
                  'pointerdown', 'pointerup', 'input', 'change', 'keydown', 'keyup', 'keypress',
                  'focus', 'blur', 'focusin', 'focusout', 'dragstart'];
  const POINTER = new Set(['click', 'auxclick', 'dblclick', 'contextmenu', 'mousedown', 'mouseup',
                           'pointerdown', 'pointerup']);
  for (const type of EVENTS) {
    window.addEventListener(type, (e) => {
      if (inBar(e.target)) {           // the toolbar's own events: nobody else sees them
        e.stopImmediatePropagation();
        onBarEvent(e);
        return;
      }
      if (mode && type === 'keydown' && e.key === 'Escape') {
        e.stopImmediatePropagation(); e.preventDefault(); setMode(null); return;
      }
      if (mode && POINTER.has(type)) {  // a pick: the page must not act on it
        e.stopImmediatePropagation();
        e.preventDefault();
        if (type === 'click' && e.target instanceof Element) pick(e.target);
        return;
      }
      const enter = type === 'keydown' && e.key === 'Enter';
      if (e.isTrusted && (type === 'click' || enter)) snapshot();
      // Playwright holds a click back ~0.5 s (to see a double click): say one is coming.
      if (e.isTrusted && type === 'click' && window[__GESTURE__]) window[__GESTURE__]();
    }, true);
  }

  function build() {
    if (document.getElementById(TOOLBAR_ID) || !document.body) return;
    bar = document.createElement('div');
    bar.id = TOOLBAR_ID;
    bar.setAttribute('lang', __LANG__);
    bar.style.cssText = 'position:fixed;right:8px;bottom:8px;z-index:2147483647;' +
      'background:#222;color:#fff;font:13px sans-serif;padding:6px 8px;border-radius:6px;' +
      'box-shadow:0 2px 8px rgba(0,0,0,.4);display:flex;gap:6px;align-items:center';
    const label = document.createElement('strong');
    label.textContent = T.title;
    bar.append(label);
    for (const m of ['extract', 'extract_all', 'assert_text']) {
      const b = document.createElement('button');
      b.type = 'button'; b.dataset.sfMode = m; b.textContent = T[m];
      b.setAttribute('aria-pressed', 'false');
      bar.append(b);
    }
    const box = document.createElement('input');
    box.placeholder = T.name; box.setAttribute('aria-label', T.name); box.size = 12;
    bar.append(box);
    const fin = document.createElement('button');
    fin.type = 'button'; fin.dataset.sfFinish = ''; fin.textContent = T.finish;
    bar.append(fin);
    const status = document.createElement('span');
    status.dataset.sfStatus = '';
    bar.append(status);
    document.body.append(bar);
  }

  const ready = () => { build(); reportChanges(); };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', ready);
  else ready();
})();
"""


def page_script(lang: str) -> str:
    """The init script in the language ``lang`` (``en`` or ``zh``)."""
    texts = TEXTS.get(lang, TEXTS["en"])
    out = _SCRIPT
    for key, value in {
        "__TEXTS__": texts, "__TOOLBAR_ID__": TOOLBAR_ID, "__PICK_ATTR__": PICK_ATTRIBUTE,
        "__PICK__": PICK_BINDING, "__CHANGED__": CHANGED_BINDING, "__FINISH__": FINISH_BINDING,
        "__GESTURE__": GESTURE_BINDING,
        "__LANG__": lang if lang in TEXTS else "en",
    }.items():
        out = out.replace(key, json.dumps(value, ensure_ascii=False))
    return out
