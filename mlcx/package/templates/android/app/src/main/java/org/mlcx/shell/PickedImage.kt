package org.mlcx.shell

import android.content.Context
import android.content.Intent
import android.graphics.Bitmap
import android.graphics.BitmapFactory
import android.net.Uri
import android.util.Base64
import java.io.ByteArrayOutputStream

/**
 * An image the user picked (the system's document picker), as the data: URL the page takes
 * with a message (window.mlcx.chat's `image` option).
 */
object PickedImage {
    const val REQUEST = 45

    /** Types the page decodes as they are; others (HEIC, ...) are sent as JPEG. */
    private val PAGE_TYPES = setOf("image/png", "image/jpeg", "image/webp")

    fun intent(): Intent = Intent(Intent.ACTION_GET_CONTENT).apply {
        type = "image/*"
        addCategory(Intent.CATEGORY_OPENABLE)
    }

    fun dataUrl(context: Context, uri: Uri): String? {
        val resolver = context.contentResolver
        val bytes = resolver.openInputStream(uri)?.use { it.readBytes() } ?: return null
        val type = resolver.getType(uri)
        if (type in PAGE_TYPES) return "data:$type;base64," + Base64.encodeToString(bytes, Base64.NO_WRAP)
        val bitmap = BitmapFactory.decodeByteArray(bytes, 0, bytes.size) ?: return null
        val jpeg = ByteArrayOutputStream()
        bitmap.compress(Bitmap.CompressFormat.JPEG, 90, jpeg)
        return "data:image/jpeg;base64," + Base64.encodeToString(jpeg.toByteArray(), Base64.NO_WRAP)
    }
}
