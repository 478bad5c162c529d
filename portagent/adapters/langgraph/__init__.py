"""The LangGraph adapter (an explicit StateGraph over a LangChain chat model)."""
