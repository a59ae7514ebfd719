package org.mlcx.shell

import android.app.Activity
import android.content.Intent
import android.os.Bundle
import android.view.View
import android.view.ViewGroup.LayoutParams.MATCH_PARENT
import android.view.ViewGroup.LayoutParams.WRAP_CONTENT
import android.webkit.WebView
import android.widget.AdapterView
import android.widget.ArrayAdapter
import android.widget.Button
import android.widget.EditText
import android.widget.LinearLayout
import android.widget.Spinner
import android.widget.TextView
import org.json.JSONObject

/**
 * A minimal chat screen: a model picker, the WebView (the runtime; it shows the conversation)
 * and a native input row that talks to it through ChatBridge, with an image button when the
 * model takes images.
 */
class MainActivity : Activity() {
    private lateinit var webView: WebView
    private lateinit var bridge: ChatBridge
    private lateinit var status: TextView
    private lateinit var imageButton: Button
    private var imageUrl: String? = null

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        val models = ModelCatalog.read(this)
        status = TextView(this)
        webView = WebView(this).apply {
            settings.javaScriptEnabled = true
            settings.domStorageEnabled = true
            webViewClient = DistWebViewClient(this@MainActivity)
        }
        bridge = ChatBridge(webView) { type, event -> showEvent(type, event) }
        webView.addJavascriptInterface(bridge, ChatBridge.JS_NAME)
        val screen = LinearLayout(this).apply {
            orientation = LinearLayout.VERTICAL
            addView(modelPicker(models))
            addView(status)
            addView(webView, LinearLayout.LayoutParams(MATCH_PARENT, 0, 1f))
            addView(inputRow())
        }
        setContentView(screen)
    }

    private fun modelPicker(models: List<ModelEntry>): Spinner = Spinner(this).apply {
        val layout = android.R.layout.simple_spinner_dropdown_item
        adapter = ArrayAdapter(this@MainActivity, layout, models.map { it.label })
        onItemSelectedListener = object : AdapterView.OnItemSelectedListener {
            override fun onItemSelected(parent: AdapterView<*>?, view: View?, position: Int, id: Long) {
                bridge.loadModel(models[position].id)
            }

            override fun onNothingSelected(parent: AdapterView<*>?) = Unit
        }
    }

    @Suppress("DEPRECATION") // startActivityForResult: see onActivityResult
    private fun inputRow(): LinearLayout {
        val input = EditText(this).apply { hint = "Ask something…" }
        imageButton = Button(this).apply {
            text = "Image"
            visibility = View.GONE
            setOnClickListener { startActivityForResult(PickedImage.intent(), PickedImage.REQUEST) }
        }
        val send = Button(this).apply {
            text = "Send"
            setOnClickListener {
                bridge.send(input.text.toString(), imageUrl)
                input.setText("")
                showImage(null)
            }
        }
        val reset = Button(this).apply {
            text = "Reset"
            setOnClickListener { bridge.reset() }
        }
        return LinearLayout(this).apply {
            orientation = LinearLayout.HORIZONTAL
            addView(imageButton)
            addView(input, LinearLayout.LayoutParams(0, WRAP_CONTENT, 1f))
            addView(send)
            addView(reset)
        }
    }

    // Activity's own result API (deprecated for AndroidX's, which this shell does not depend on)
    @Suppress("OVERRIDE_DEPRECATION")
    override fun onActivityResult(requestCode: Int, resultCode: Int, data: Intent?) {
        super.onActivityResult(requestCode, resultCode, data)
        val uri = data?.data
        if (requestCode == PickedImage.REQUEST && resultCode == RESULT_OK && uri != null) {
            showImage(PickedImage.dataUrl(this, uri))
        }
    }

    private fun showImage(url: String?) {
        imageUrl = url
        imageButton.text = if (url == null) "Image" else "Image ✓"
    }

    private fun showEvent(type: String, event: JSONObject) {
        if (type == "ready") {
            imageButton.visibility = if (event.optBoolean("images")) View.VISIBLE else View.GONE
            showImage(null)
        }
        status.text = when (type) {
            "status" -> statusLine(event)
            "ready" -> "${event.optString("model")} · ${event.optString("quantization")} · " +
                "${event.optInt("kvBlocks")} KV pages" +
                (event.optString("note").takeIf { it.isNotEmpty() && it != "null" }?.let { " · $it" } ?: "")
            "error" -> event.optString("message")
            else -> status.text
        }
    }

    private fun statusLine(event: JSONObject): String = when (event.optString("stage")) {
        "weights" -> "weights ${event.optLong("done") shr 20} / ${event.optLong("total") shr 20} MB"
        "kernels" -> "compiling kernels ${event.optInt("done")}/${event.optInt("total")}"
        else -> status.text.toString()
    }
}
