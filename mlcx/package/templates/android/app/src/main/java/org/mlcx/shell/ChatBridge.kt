package org.mlcx.shell

import android.os.Handler
import android.os.Looper
import android.webkit.JavascriptInterface
import android.webkit.WebView
import org.json.JSONObject

/**
 * The native chat API over the page's runtime: load a model, send a message, with an image
 * where the model takes images (its tokens stream back as "token" events, then "done"), reset
 * the conversation. Events are the page's (web/src/bridge.js): status (kernels, weights
 * download progress), ready (with "images"), token, done, error.
 */
class ChatBridge(private val webView: WebView, private val listener: Listener) {
    fun interface Listener {
        fun onEvent(type: String, event: JSONObject)
    }

    private val main = Handler(Looper.getMainLooper())

    /** Called by the page (as window.mlcxAndroid.postMessage) on a WebView thread. */
    @JavascriptInterface
    fun postMessage(json: String) {
        val event = JSONObject(json)
        main.post { listener.onEvent(event.optString("type"), event) }
    }

    fun loadModel(modelId: String) {
        webView.loadUrl(DistOrigin.pageUrl(modelId))
    }

    /** imageUrl: a data: URL (PickedImage) sent with the text, or null. */
    fun send(text: String, imageUrl: String? = null) {
        if (text.isBlank()) return
        val options = JSONObject().apply { if (imageUrl != null) put("image", imageUrl) }
        webView.evaluateJavascript("window.mlcx.chat(${JSONObject.quote(text)}, $options)", null)
    }

    fun reset() {
        webView.evaluateJavascript("window.mlcx.reset()", null)
    }

    companion object {
        /** The name the page looks for (window.mlcxAndroid). */
        const val JS_NAME = "mlcxAndroid"
    }
}
