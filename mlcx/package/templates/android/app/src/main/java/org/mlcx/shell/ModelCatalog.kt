package org.mlcx.shell

import android.content.Context
import org.json.JSONObject

/** One model of www/mlcx-app.json, the app config `mlcx package --app` writes. */
data class ModelEntry(
    val id: String,
    val name: String,
    val estimatedMemoryBytes: Long,
    val weightsBundled: Boolean,
    val images: Boolean,
) {
    val label: String
        get() {
            val where = if (weightsBundled) "bundled" else "downloaded on first use"
            val input = if (images) "text and images" else "text only"
            return "$name (${estimatedMemoryBytes / (1 shl 20)} MB, weights $where, $input)"
        }
}

object ModelCatalog {
    fun read(context: Context): List<ModelEntry> {
        val text = context.assets.open("www/mlcx-app.json").bufferedReader().use { it.readText() }
        val models = JSONObject(text).getJSONArray("models")
        return (0 until models.length()).map { i ->
            val model = models.getJSONObject(i)
            val first = model.getJSONArray("variants").getJSONObject(0)
            ModelEntry(
                id = model.getString("id"),
                name = model.getString("name"),
                estimatedMemoryBytes = model.getLong("estimated_memory_bytes"),
                weightsBundled = first.getBoolean("weights_bundled"),
                images = model.optBoolean("images", false),
            )
        }
    }
}
