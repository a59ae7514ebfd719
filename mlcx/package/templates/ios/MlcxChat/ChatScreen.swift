import SwiftUI
import WebKit

/// A minimal chat screen: a model picker, the web view (the runtime; it shows the
/// conversation) and a native input row that talks to it through ChatBridge.
struct ChatScreen: View {
    @StateObject private var bridge = ChatBridge()
    @State private var models = ModelCatalog.load()
    @State private var selected = ""
    @State private var draft = ""

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
        bridge.send(draft)
        draft = ""
    }
}

struct WebViewHost: UIViewRepresentable {
    let webView: WKWebView

    func makeUIView(context: Context) -> WKWebView {
        webView
    }

    func updateUIView(_ view: WKWebView, context: Context) {}
}
