package org.mlcx.shell

import android.content.Context
import android.net.Uri
import android.webkit.WebResourceRequest
import android.webkit.WebResourceResponse
import android.webkit.WebView
import android.webkit.WebViewClient
import androidx.webkit.WebViewAssetLoader
import java.io.IOException

/**
 * Serves the app's assets www/ and bundle/ (synced from dist/ at build time) under one https
 * origin, in the layout `mlcx package --app` writes: the page at /www/, a model's weights at
 * /bundle/<id>/params/. WebGPU needs a secure context, which an https origin is.
 */
object DistOrigin {
    const val HOST = "appassets.androidplatform.net"
    const val ORIGIN = "https://$HOST"

    fun pageUrl(modelId: String): String =
        "$ORIGIN/www/index.html?app=mlcx-app.json&model=${Uri.encode(modelId)}&composer=native"
}

class DistWebViewClient(context: Context) : WebViewClient() {
    private val loader = WebViewAssetLoader.Builder()
        .setDomain(DistOrigin.HOST)
        .addPathHandler("/www/", AssetFolder(context, "www/"))
        .addPathHandler("/bundle/", AssetFolder(context, "bundle/"))
        .build()

    override fun shouldInterceptRequest(
        view: WebView,
        request: WebResourceRequest,
    ): WebResourceResponse? = loader.shouldInterceptRequest(request.url)
}

/** One assets folder; module scripts need a JavaScript MIME type, so types are set here. */
private class AssetFolder(
    private val context: Context,
    private val folder: String,
) : WebViewAssetLoader.PathHandler {
    override fun handle(path: String): WebResourceResponse {
        if (path.split('/').any { it == ".." }) return notFound()
        return try {
            WebResourceResponse(mimeType(path), null, context.assets.open(folder + path))
        } catch (e: IOException) {
            notFound()
        }
    }

    private fun notFound() =
        WebResourceResponse("text/plain", null, 404, "Not Found", emptyMap(), null)
}

private val MIME_TYPES = mapOf(
    "html" to "text/html",
    "js" to "text/javascript",
    "mjs" to "text/javascript",
    "css" to "text/css",
    "json" to "application/json",
    "wgsl" to "text/plain",
)

private fun mimeType(path: String): String =
    MIME_TYPES[path.substringAfterLast('.', "")] ?: "application/octet-stream"
