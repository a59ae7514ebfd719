// The app serves ../../www and ../../bundle (dist/www, dist/bundle) from its assets: they are
// synced into a generated assets folder at build time, never copied into this project.
plugins {
    id("com.android.application")
    id("org.jetbrains.kotlin.android")
}

val mlcxAssets = layout.buildDirectory.dir("generated/mlcx-assets")

val syncMlcxFiles by tasks.registering(Sync::class) {
    from("../../www") { into("www") }
    from("../../bundle") { into("bundle") }
    into(mlcxAssets)
}

android {
    namespace = "org.mlcx.shell"
    compileSdk = 35

    defaultConfig {
        applicationId = "@@APP_ID@@"
        minSdk = 29
        targetSdk = 35
        versionCode = 1
        versionName = "1.0"
    }

    sourceSets["main"].assets.srcDir(mlcxAssets)

    androidResources {
        // shards are read whole by the WebView; stored uncompressed they stream from the APK
        noCompress += listOf("bin", "json", "wgsl")
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }
    kotlinOptions {
        jvmTarget = "17"
    }
}

tasks.named("preBuild") { dependsOn(syncMlcxFiles) }

dependencies {
    implementation("androidx.webkit:webkit:1.12.1")
}
