"""tau-bench (v1) retail domain: its 16 tools over its own JSON data, as in ``tau_bench/envs/retail``.

Records are plain JSON dicts (v1 has no data model beyond its files); every tool returns text and
reports failures as ``Error: ...`` text or by raising, exactly like tau-bench's ``Tool.invoke``.
The functions carry tau-bench's qualified names (``GetProductDetails.invoke``), so a call with a
wrong argument name fails with the very ``TypeError`` message tau-bench shows the agent.

Tool bodies repeat each other where the original's do (tau-bench and tau2 write each tool out in
full): they are ports kept line for line on purpose, so a behaviour difference shows in a diff
against the original, and ``duplicates`` lists them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any, ClassVar, TypeAlias

from agentgym.envs.tooluse.data import read_json
from agentgym.envs.tooluse.db import Database
from agentgym.envs.tooluse.retail import calculate as _calculate
from agentgym.envs.tooluse.schema import tool_schema
from agentgym.envs.tooluse.toolkit import ToolKind, Toolkit, ToolResult

TOOLS: dict[str, tuple[Callable[..., Any], ToolKind]] = {}


def v1_tool(class_name: str, kind: ToolKind) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a tau-bench tool under its function name, with tau-bench's class name."""

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        func.__qualname__ = f"{class_name}.invoke"
        TOOLS[func.__name__] = (func, kind)
        return func

    return register


@cache
def base_tables() -> dict[str, dict[str, Any]]:
    """v1's own orders, products and users, loaded once per process."""
    return {
        name: read_json(f"tau_bench/retail/{name}.json") for name in ("orders", "products", "users")
    }


Data: TypeAlias = Database


@v1_tool("Calculate", ToolKind.GENERIC)
def calculate(data: Data, expression: str) -> str:
    """Calculate the result of a mathematical expression.

    Args:
        expression: The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, operators (+, -, *, /), parentheses, and spaces.
    """
    if not all(char in "0123456789+-*/(). " for char in expression):
        return "Error: invalid characters in expression"
    try:
        return _calculate(expression)
    except Exception as e:  # tau-bench returns the evaluation error as text
        return f"Error: {e}"


@v1_tool("CancelPendingOrder", ToolKind.WRITE)
def cancel_pending_order(data: Data, order_id: str, reason: str) -> str:
    """Cancel a pending order. If the order is already processed or delivered, it cannot be cancelled. The agent needs to explain the cancellation detail and ask for explicit user confirmation (yes/no) to proceed. If the user confirms, the order status will be changed to 'cancelled' and the payment will be refunded. The refund will be added to the user's gift card balance immediately if the payment was made using a gift card, otherwise the refund would take 5-7 business days to process. The function returns the order details after the cancellation.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        reason: The reason for cancellation, which should be either 'no longer needed' or 'ordered by mistake'.
    """
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be cancelled"
    if reason not in ["no longer needed", "ordered by mistake"]:
        return "Error: invalid reason"
    refunds = []
    for payment in order["payment_history"]:
        payment_id = payment["payment_method_id"]
        refunds.append(
            {
                "transaction_type": "refund",
                "amount": payment["amount"],
                "payment_method_id": payment_id,
            }
        )
        if "gift_card" in payment_id:
            method = data["users"][order["user_id"]]["payment_methods"][payment_id]
            method["balance"] += payment["amount"]
            method["balance"] = round(method["balance"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return json.dumps(order)


def _exchange_checks(
    data: Data, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str]
) -> float | str:
    """Shared item checks of exchange and modify; the price difference, or an error text."""
    all_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_item_ids.count(item_id):
            return f"Error: {item_id} not found"
    if len(item_ids) != len(new_item_ids):
        return "Error: the number of items to be exchanged should match"
    diff_price = 0
    products = data["products"]
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = [item for item in order["items"] if item["item_id"] == item_id][0]
        variants = products.peek(item["product_id"])["variants"]
        if not (new_item_id in variants and variants[new_item_id]["available"]):
            return f"Error: new item {new_item_id} not found or available"
        diff_price += variants[new_item_id]["price"] - item["price"]
    return diff_price


@v1_tool("ExchangeDeliveredOrderItems", ToolKind.WRITE)
def exchange_delivered_order_items(
    data: Data, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    """Exchange items in a delivered order to new items of the same product type. For a delivered order, return or exchange can be only done once by the agent. The agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        item_ids: The item ids to be exchanged, each such as '1008292230'. There could be duplicate items in the list.
        new_item_ids: The item ids to be exchanged for, each such as '1008292230'. There could be duplicate items in the list. Each new item id should match the item id in the same position and be of the same product.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    orders, users = data["orders"], data["users"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "delivered":
        return "Error: non-delivered order cannot be exchanged"
    diff_price = _exchange_checks(data, order, item_ids, new_item_ids)
    if isinstance(diff_price, str):
        return diff_price
    diff_price = round(diff_price, 2)
    methods = users.peek(order["user_id"])["payment_methods"]
    if payment_method_id not in methods:
        return "Error: payment method not found"
    method = methods[payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < diff_price:
        return "Error: insufficient gift card balance to pay for the price difference"
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff_price
    return json.dumps(order)


@v1_tool("FindUserIdByEmail", ToolKind.READ)
def find_user_id_by_email(data: Data, email: str) -> str:
    """Find user id by email. If the user is not found, the function will return an error message.

    Args:
        email: The email of the user, such as 'something@example.com'.
    """
    for user_id, profile in data["users"].peek_items():
        if profile["email"].lower() == email.lower():
            return str(user_id)
    return "Error: user not found"


@v1_tool("FindUserIdByNameZip", ToolKind.READ)
def find_user_id_by_name_zip(data: Data, first_name: str, last_name: str, zip: str) -> str:
    """Find user id by first name, last name, and zip code. If the user is not found, the function will return an error message. By default, find user id by email, and only call this function if the user is not found by email or cannot remember email.

    Args:
        first_name: The first name of the customer, such as 'John'.
        last_name: The last name of the customer, such as 'Doe'.
        zip: The zip code of the customer, such as '12345'.
    """
    for user_id, profile in data["users"].peek_items():
        if (
            profile["name"]["first_name"].lower() == first_name.lower()
            and profile["name"]["last_name"].lower() == last_name.lower()
            and profile["address"]["zip"] == zip
        ):
            return str(user_id)
    return "Error: user not found"


def _lookup(table_name: str, what: str) -> Callable[[Data, str], str]:
    def lookup(data: Data, key: str) -> str:
        table = data[table_name]
        if key in table:
            return json.dumps(table.peek(key))
        return f"Error: {what} not found"

    return lookup


@v1_tool("GetOrderDetails", ToolKind.READ)
def get_order_details(data: Data, order_id: str) -> str:
    """Get the status and details of an order.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
    """
    return _lookup("orders", "order")(data, order_id)


@v1_tool("GetProductDetails", ToolKind.READ)
def get_product_details(data: Data, product_id: str) -> str:
    """Get the inventory details of a product.

    Args:
        product_id: The product id, such as '6086499569'. Be careful the product id is different from the item id.
    """
    return _lookup("products", "product")(data, product_id)


@v1_tool("GetUserDetails", ToolKind.READ)
def get_user_details(data: Data, user_id: str) -> str:
    """Get the details of a user.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
    """
    return _lookup("users", "user")(data, user_id)


@v1_tool("ListAllProductTypes", ToolKind.READ)
def list_all_product_types(data: Data) -> str:
    """List the name and product id of all product types. Each product type has a variety of different items with unique item ids and options. There are only 50 product types in the store."""
    products = {p["name"]: p["product_id"] for p in data["products"].peek_values()}
    return json.dumps(dict(sorted(products.items())))


def _address(
    address1: str, address2: str, city: str, state: str, country: str, zip: str
) -> dict[str, str]:
    return {
        "address1": address1,
        "address2": address2,
        "city": city,
        "state": state,
        "country": country,
        "zip": zip,
    }


@v1_tool("ModifyPendingOrderAddress", ToolKind.WRITE)
def modify_pending_order_address(
    data: Data,
    order_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> str:
    """Modify the shipping address of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The province, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be modified"
    order["address"] = _address(address1, address2, city, state, country, zip)
    return json.dumps(order)


@v1_tool("ModifyPendingOrderItems", ToolKind.WRITE)
def modify_pending_order_items(
    data: Data, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    """Modify items in a pending order to new items of the same product type. For a pending order, this function can only be called once. The agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        item_ids: The item ids to be modified, each such as '1008292230'. There could be duplicate items in the list.
        new_item_ids: The item ids to be modified for, each such as '1008292230'. There could be duplicate items in the list. Each new item id should match the item id in the same position and be of the same product.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be modified"
    diff_price = _exchange_checks(data, order, item_ids, new_item_ids)
    if isinstance(diff_price, str):
        return diff_price
    if payment_method_id not in data["users"].peek(order["user_id"])["payment_methods"]:
        return "Error: payment method not found"
    method = data["users"][order["user_id"]]["payment_methods"][payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < diff_price:
        return "Error: insufficient gift card balance to pay for the new item"
    order["payment_history"].append(
        {
            "transaction_type": "payment" if diff_price > 0 else "refund",
            "amount": abs(diff_price),
            "payment_method_id": payment_method_id,
        }
    )
    if method["source"] == "gift_card":
        method["balance"] -= diff_price
        method["balance"] = round(method["balance"], 2)
    products = data["products"]
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = [item for item in order["items"] if item["item_id"] == item_id][0]
        variant = products.peek(item["product_id"])["variants"][new_item_id]
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = dict(variant["options"])
    order["status"] = "pending (item modified)"
    return json.dumps(order)


@v1_tool("ModifyPendingOrderPayment", ToolKind.WRITE)
def modify_pending_order_payment(data: Data, order_id: str, payment_method_id: str) -> str:
    """Modify the payment method of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "pending":
        return "Error: non-pending order cannot be modified"
    if payment_method_id not in data["users"].peek(order["user_id"])["payment_methods"]:
        return "Error: payment method not found"
    history = order["payment_history"]
    if len(history) > 1 or history[0]["transaction_type"] != "payment":
        return "Error: there should be exactly one payment for a pending order"
    if history[0]["payment_method_id"] == payment_method_id:
        return "Error: the new payment method should be different from the current one"
    amount = history[0]["amount"]
    methods = data["users"][order["user_id"]]["payment_methods"]
    method = methods[payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < amount:
        return "Error: insufficient gift card balance to pay for the order"
    history.extend(
        [
            {
                "transaction_type": "payment",
                "amount": amount,
                "payment_method_id": payment_method_id,
            },
            {
                "transaction_type": "refund",
                "amount": amount,
                "payment_method_id": history[0]["payment_method_id"],
            },
        ]
    )
    if method["source"] == "gift_card":
        method["balance"] -= amount
        method["balance"] = round(method["balance"], 2)
    if "gift_card" in history[0]["payment_method_id"]:
        old = methods[history[0]["payment_method_id"]]
        old["balance"] += amount
        old["balance"] = round(old["balance"], 2)
    return json.dumps(order)


@v1_tool("ModifyUserAddress", ToolKind.WRITE)
def modify_user_address(
    data: Data,
    user_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> str:
    """Modify the default address of a user. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.

    Args:
        user_id: The user id, such as 'sara_doe_496'.
        address1: The first line of the address, such as '123 Main St'.
        address2: The second line of the address, such as 'Apt 1' or ''.
        city: The city, such as 'San Francisco'.
        state: The state, such as 'CA'.
        country: The country, such as 'USA'.
        zip: The zip code, such as '12345'.
    """
    users = data["users"]
    if user_id not in users:
        return "Error: user not found"
    user = users[user_id]
    user["address"] = _address(address1, address2, city, state, country, zip)
    return json.dumps(user)


@v1_tool("ReturnDeliveredOrderItems", ToolKind.WRITE)
def return_delivered_order_items(
    data: Data, order_id: str, item_ids: list[str], payment_method_id: str
) -> str:
    """Return some items of a delivered order. The order status will be changed to 'return requested'. The agent needs to explain the return detail and ask for explicit user confirmation (yes/no) to proceed. The user will receive follow-up email for how and where to return the item.

    Args:
        order_id: The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.
        item_ids: The item ids to be returned, each such as '1008292230'. There could be duplicate items in the list.
        payment_method_id: The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.
    """
    orders = data["orders"]
    if order_id not in orders:
        return "Error: order not found"
    order = orders[order_id]
    if order["status"] != "delivered":
        return "Error: non-delivered order cannot be returned"
    if payment_method_id not in data["users"].peek(order["user_id"])["payment_methods"]:
        return "Error: payment method not found"
    if (
        "gift_card" not in payment_method_id
        and payment_method_id != order["payment_history"][0]["payment_method_id"]
    ):
        return "Error: payment method should be either the original payment method or a gift card"
    all_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_item_ids.count(item_id):
            return "Error: some item not found"
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return json.dumps(order)


@v1_tool("Think", ToolKind.THINK)
def think(data: Data, thought: str) -> str:
    """Use the tool to think about something. It will not obtain new information or change the database, but just append the thought to the log. Use it when complex reasoning or some cache memory is needed.

    Args:
        thought: A thought to think about.
    """
    return ""


@v1_tool("TransferToHumanAgents", ToolKind.GENERIC)
def transfer_to_human_agents(data: Data, summary: str) -> str:
    """Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user explicitly asks for a human agent, or if the user's issue cannot be resolved by the agent with the available tools.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


class RetailV1Tools(Toolkit):
    """tau-bench v1's retail tools (module functions called as ``Tool.invoke(data=..., **kwargs)``)."""

    unknown_tool_message: ClassVar[str] = "Unknown action {name}"

    @classmethod
    def tool_functions(cls) -> dict[str, Callable[..., Any]]:
        return {name: fn for name, (fn, _) in TOOLS.items()}

    @classmethod
    def kind(cls, name: str) -> ToolKind | None:
        return TOOLS[name][1] if name in TOOLS else None

    @classmethod
    def schemas(cls) -> list[dict[str, Any]]:
        return [tool_schema(name, fn) for name, (fn, _) in TOOLS.items()]

    def invoke(self, name: str, arguments: dict[str, Any]) -> Any:
        return TOOLS[name][0](data=self.db, **arguments)

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """tau-bench's ``Env.step`` for a tool: unknown names and exceptions become text."""
        if name not in TOOLS:
            return ToolResult(self.unknown_tool_message.format(name=name), True)
        try:
            output = str(self.invoke(name, arguments))
        except Exception as e:  # tau-bench shows every tool exception to the agent
            return ToolResult(f"Error: {e}", True)
        return ToolResult(output, output.startswith("Error:"))


def database() -> Database:
    """A fresh episode view of v1's retail data (shares the process-wide base)."""
    return Database(base_tables(), "tau_bench")
