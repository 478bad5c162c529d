"""A customer-service bot in the shape of the Anthropic cookbook: tool definitions as plain dicts, a
hand-written ``messages.create`` loop dispatching ``tool_use`` blocks by name through a dict."""

import json

import anthropic

client = anthropic.Anthropic()
MODEL_NAME = "claude-3-5-sonnet-20241022"
SYSTEM_PROMPT = "You are a customer support agent for Acme. Look customers and orders up before answering."

tools = [
    {
        "name": "get_customer_info",
        "description": "Retrieves customer information based on their customer ID.",
        "input_schema": {
            "type": "object",
            "properties": {
                "customer_id": {"type": "string", "description": "The unique identifier for the customer."}
            },
            "required": ["customer_id"],
        },
    },
    {
        "name": "get_order_details",
        "description": "Retrieves the details of a specific order based on the order ID.",
        "input_schema": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "The unique identifier for the order."}
            },
            "required": ["order_id"],
        },
    },
    {
        "name": "cancel_order",
        "description": "Cancels an order based on the provided order ID.",
        "input_schema": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "The order to cancel."},
                "reason": {"type": "string", "description": "Why the customer cancels."},
            },
            "required": ["order_id"],
        },
    },
    {"name": "get_store_hours", "description": "Today's opening hours.", "input_schema": {"type": "object"}},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
]


def get_store_hours():
    return "9:00-18:00"


def get_customer_info(customer_id):
    return {"C1": {"name": "John Doe", "email": "john@example.com"}}.get(customer_id, "Customer not found")


def lookup_order(order_id):
    return {"O1": {"id": "O1", "status": "Shipped"}}.get(order_id, "Order not found")


def cancel_order(order_id, reason=None):
    return "Cancelled" if order_id == "O1" else "Order not found"


TOOL_FUNCTIONS = {
    "get_customer_info": get_customer_info,
    "get_order_details": lookup_order,
    "cancel_order": cancel_order,
}


def process_tool_call(tool_name, tool_input):
    return TOOL_FUNCTIONS[tool_name](**tool_input)


def chatbot_interaction(user_message):
    messages = [{"role": "user", "content": user_message}]
    response = client.messages.create(
        model=MODEL_NAME, max_tokens=4096, system=SYSTEM_PROMPT, tools=tools, messages=messages
    )
    while response.stop_reason == "tool_use":
        tool_use = next(block for block in response.content if block.type == "tool_use")
        result = process_tool_call(tool_use.name, tool_use.input)
        messages.append({"role": "assistant", "content": response.content})
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tool_use.id, "content": json.dumps(result)}
                ],
            }
        )
        response = client.messages.create(model=MODEL_NAME, max_tokens=4096, tools=tools, messages=messages)
    return next((b.text for b in response.content if hasattr(b, "text")), None)


if __name__ == "__main__":
    print(chatbot_interaction("Cancel order O1"))
