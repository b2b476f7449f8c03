// The offline page's one job besides saying so: come back by itself. It asks the server's
// health twice a second and, as soon as anything answers, loads the page the person asked for
// (the offline page stands in at that page's address, so a reload is that page).
'use strict';
(function () {
  const EVERY_MS = 500;
  async function answers() {
    try {
      await fetch('/api/v1/health', { cache: 'no-store' });
      return true;
    } catch (_) {
      return false;
    }
  }
  async function poll() {
    if (await answers()) {
      location.reload();
      return;
    }
    setTimeout(poll, EVERY_MS);
  }
  setTimeout(poll, EVERY_MS);
})();
