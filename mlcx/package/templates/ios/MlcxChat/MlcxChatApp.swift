import SwiftUI

@main
struct MlcxChatApp: App {
    var body: some Scene {
        WindowGroup {
            ChatScreen()
        }
    }
}
