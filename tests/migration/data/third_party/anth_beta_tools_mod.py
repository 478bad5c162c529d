"""``@beta_tool`` functions kept apart from the program that runs them (anth_runner_module.py)."""

from anthropic import beta_tool


@beta_tool
def get_weather(location: str, unit: str = "celsius") -> str:
    """Get the current weather for a location.

    Args:
        location: The city and country, e.g. Paris, France
        unit: celsius or fahrenheit
    """
    return f"It is 20 degrees {unit} in {location}."


@beta_tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: e.g. 2 * (3 + 4)
    """
    return str(sum(int(x) for x in expression.split("+")))
