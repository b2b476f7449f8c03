// Registers the service worker (public/sw.js): notifications with Approve and Deny, and the
// offline page. Loaded by every page; does nothing where service workers are unavailable.
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch((err) => {
    console.warn('Countersign: the service worker did not register:', err);
  });
}
