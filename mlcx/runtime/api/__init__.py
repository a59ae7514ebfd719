"""The APIs built on the engine: `llm.py` (Python, in process), `async_engine.py` (the servers'
asyncio face), `chat_session.py` (a kept conversation), `embedder.py` and `async_embedder.py`
(embedding artifacts). The package face (`mlcx/__init__.py`) exports from here."""
