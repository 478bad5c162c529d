"""A ReAct agent with a structured answer (``response_format``) and a Gemini model."""

from langchain_core.tools import tool
from langchain_google_genai import ChatGoogleGenerativeAI
from langgraph.prebuilt import create_react_agent
from pydantic import BaseModel, Field


class WeatherReport(BaseModel):
    """The final weather answer."""

    city: str = Field(description="The city asked about")
    temperature_c: float
    conditions: str


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"It is 21C and sunny in {city}"


weather_agent = create_react_agent(
    ChatGoogleGenerativeAI(model="gemini-2.5-flash"),
    tools=[get_weather],
    prompt="You report the weather.",
    response_format=WeatherReport,
)
