import PhotosUI
import SwiftUI
import WebKit

/// A minimal chat screen: a model picker, the web view (the runtime; it shows the
/// conversation) and a native input row that talks to it through ChatBridge, with a photo
/// picker when the model takes images.
struct ChatScreen: View {
    @StateObject private var bridge = ChatBridge()
    @State private var models = ModelCatalog.load()
    @State private var selected = ""
    @State private var draft = ""
    @State private var photo: PhotosPickerItem?
    @State private var jpeg: Data?

    var body: some View {
        VStack(spacing: 8) {
            Picker("Model", selection: $selected) {
                ForEach(models) { model in
                    Text(model.label).tag(model.id)
                }
            }
            .onChange(of: selected) { _, modelID in
                bridge.loadModel(modelID)
            }
            Text(bridge.status)
                .font(.footnote)
                .foregroundStyle(.secondary)
            WebViewHost(webView: bridge.webView)
            HStack {
                if bridge.takesImages {
                    PhotosPicker(selection: $photo, matching: .images) {
                        Image(systemName: jpeg == nil ? "photo" : "photo.fill")
                    }
                    .onChange(of: photo) { _, item in
                        Task { jpeg = await Self.jpeg(item) }
                    }
                }
                TextField("Ask something…", text: $draft)
                    .textFieldStyle(.roundedBorder)
                    .onSubmit(send)
                Button("Send", action: send)
                    .disabled(!bridge.isReady)
                Button("Reset") {
                    bridge.reset()
                }
            }
        }
        .padding()
        .onAppear {
            if selected.isEmpty, let first = models.first {
                selected = first.id
            }
        }
    }

    private func send() {
        bridge.send(draft, jpeg: jpeg)
        draft = ""
        photo = nil
        jpeg = nil
    }

    /// The picked photo as JPEG: the page decodes PNG, JPEG and WebP, the library may hold HEIC.
    private static func jpeg(_ item: PhotosPickerItem?) async -> Data? {
        guard let data = try? await item?.loadTransferable(type: Data.self) else { return nil }
        return UIImage(data: data)?.jpegData(compressionQuality: 0.9)
    }
}

struct WebViewHost: UIViewRepresentable {
    let webView: WKWebView

    func makeUIView(context: Context) -> WKWebView {
        webView
    }

    func updateUIView(_ view: WKWebView, context: Context) {}
}
