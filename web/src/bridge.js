// Events for a native app hosting this page: WKScriptMessageHandler "mlcx" on iOS, the
// @JavascriptInterface object "mlcxAndroid" on Android (see mlcx/package/templates/).
// Events: {type: "status" | "ready" | "token" | "done" | "error", ...}. A plain browser has
// neither, and the events go nowhere.

export function notify(event) {
  window.webkit?.messageHandlers?.mlcx?.postMessage(event);
  window.mlcxAndroid?.postMessage(JSON.stringify(event));
}
