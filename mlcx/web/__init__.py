"""`mlcx web`: serve the in-browser demo (web/) and a WebGPU-plan artifact on 127.0.0.1."""
