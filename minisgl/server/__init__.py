"""The OpenAI-compatible server (the book's chapter 15): protocol.py (requests checked into Generations, the shapes of
replies, chunks and errors), api.py (the FastAPI app), launch.py and workers.py (its processes), args.py."""
