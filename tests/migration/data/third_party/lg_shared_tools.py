"""LangChain ``@tool`` functions kept in a module of their own, imported by lg_class_node.py and
lg_react_prompt_fn.py (as people split ``tools.py`` from ``graph.py``)."""

from langchain_core.tools import tool


@tool
def search_web(query: str) -> str:
    """Search the web for up-to-date information.

    Args:
        query: What to search for.
    """
    return f"results for {query}"


@tool
def get_stock_price(ticker: str) -> float:
    """Get the latest price of a stock.

    Args:
        ticker: The stock's ticker symbol, e.g. AAPL.
    """
    return 101.5
