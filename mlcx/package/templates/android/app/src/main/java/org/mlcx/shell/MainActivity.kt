package org.mlcx.shell

import android.app.Activity
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
 * and a native input row that talks to it through ChatBridge.
 */
class MainActivity : Activity() {
    private lateinit var webView: WebView
    private lateinit var bridge: ChatBridge
    private lateinit var status: TextView

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

    private fun inputRow(): LinearLayout {
        val input = EditText(this).apply { hint = "Ask something…" }
        val send = Button(this).apply {
            text = "Send"
            setOnClickListener {
                bridge.send(input.text.toString())
                input.setText("")
            }
        }
        val reset = Button(this).apply {
            text = "Reset"
            setOnClickListener { bridge.reset() }
        }
        return LinearLayout(this).apply {
            orientation = LinearLayout.HORIZONTAL
            addView(input, LinearLayout.LayoutParams(0, WRAP_CONTENT, 1f))
            addView(send)
            addView(reset)
        }
    }

    private fun showEvent(type: String, event: JSONObject) {
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
