// A ready service worker for pages that want the engine to outlive them: register it with
// `navigator.serviceWorker.register("/mlcx-web/service_worker.js", {type: "module", scope: "/"})`
// (`mlcx web` allows the root scope) and call CreateServiceWorkerMLCEngine. It takes over the
// open pages at once, so the first visit does not need a reload. A service worker may not
// import() anything, so XGrammar (for response_format and forced tool calls) is imported here
// up front; a service worker of your own that constrains output imports it the same way.

import "@mlc-ai/web-xgrammar";
import { ServiceWorkerMLCEngineHandler } from "./index.js";

new ServiceWorkerMLCEngineHandler();
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
