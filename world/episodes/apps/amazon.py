"""The ``amazon`` app: a product catalogue, a cart, saved cards and addresses, orders.

Records (``apps["amazon"]``):

- ``products``: ``{product_id, name, category, price, rating, stock, description}``
  (``stock``: units available; an order takes them).
- ``cart``: ``{product_id, quantity}`` (keyed by ``product_id``).
- ``payment_cards``: ``{payment_card_id, card_name, owner_name, last_four, expiry}``.
- ``addresses``: ``{address_id, name, street_address, city, state, zip_code, country}``.
- ``orders``: ``{order_id, order_items: [{product_id, name, price, ordered_quantity}],
  payment_card_id, address_id, total, status: "placed", placed_at}`` (``placed_at`` in virtual
  minutes). Order ids start at 901.

Tools (``mcp_appworld_amazon__<api>``): ``search_products(query, max_price?)``,
``show(product_id)``, ``add_product_to_cart(product_id, quantity=1)`` (adds to the line),
``remove_product_from_cart(product_id)``, ``show_cart()``, ``show_payment_cards()``,
``show_addresses()``, ``place_order(payment_card_id, address_id)`` -> ``{order_id, order_items,
total}`` (orders the whole cart and empties it; failed when the cart is empty or stock is short),
``show_order(order_id)`` (the order record, as in pi-Bench's Appendix C.4), ``show_orders()``.
Money is a float rounded to 2 places.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from messages.probes import JsonObject
from world.episodes.apps.base import (
    Args,
    EpisodeTool,
    NoArgs,
    ToolContext,
    ToolFailed,
    app_tool,
    id_field,
    money,
    pick,
    rows_of,
    search,
)

APP = "amazon"
FIRST_ORDER_ID = 901


PRODUCT_FIELDS = ("product_id", "name", "category", "price", "rating", "stock", "description")


SEED: dict[str, Any] = {
    "products": rows_of(
        PRODUCT_FIELDS,
        (1571, "Insulated Steel Water Bottle 750 ml", "kitchen", 24.99, 4.6, 40, "Keeps drinks cold."),
        (1572, "Bamboo Cutting Board Set", "kitchen", 32.5, 4.4, 15, "Three boards, juice groove."),
        (1573, "Wireless Ergonomic Mouse", "electronics", 29.99, 4.3, 25, "Silent clicks, USB receiver."),
        (1574, "USB-C Charging Cable 2 m (2-pack)", "electronics", 12.99, 4.5, 80, "Braided, 60 W."),
        (1575, "A5 Dotted Notebook", "office", 9.5, 4.7, 60, "160 pages, lay-flat binding."),
        (1576, "Gel Ink Pens (12-pack)", "office", 11.25, 4.2, 50, "Black, 0.5 mm fine tip."),
        (1577, "Yoga Mat 6 mm", "sports", 27.0, 4.4, 20, "Non-slip, with carry strap."),
        (1578, "Ceramic Pour-Over Coffee Dripper", "kitchen", 18.75, 4.8, 30, "Fits size 02 filters."),
        (1579, "Paper Coffee Filters Size 02 (100)", "kitchen", 6.49, 4.6, 100, "Unbleached."),
        (1580, "Noise-Cancelling Headphones", "electronics", 149.0, 4.5, 10, "Over-ear, 30 h battery."),
        (1581, "LED Desk Lamp", "office", 34.99, 4.3, 18, "Dimmable, USB charging port."),
        (1582, "Running Socks (3 pairs)", "sports", 14.99, 4.1, 45, "Cushioned, breathable."),
    ),
    "cart": [],
    "payment_cards": [
        {
            "payment_card_id": 1,
            "card_name": "Visa Everyday",
            "owner_name": "Alex Morgan",
            "last_four": "4821",
            "expiry": "08/28",
        },
        {
            "payment_card_id": 2,
            "card_name": "Mastercard Travel",
            "owner_name": "Alex Morgan",
            "last_four": "7730",
            "expiry": "02/27",
        },
    ],
    "addresses": [
        {
            "address_id": 1,
            "name": "Home",
            "street_address": "12 Larch Lane",
            "city": "Millbrook",
            "state": "OR",
            "zip_code": "97001",
            "country": "USA",
        },
        {
            "address_id": 2,
            "name": "Office",
            "street_address": "400 Harbor Street, Floor 3",
            "city": "Millbrook",
            "state": "OR",
            "zip_code": "97003",
            "country": "USA",
        },
    ],
    "orders": [],
    "_next_ids": {"orders": FIRST_ORDER_ID},
}

_SUMMARY = ("product_id", "name", "category", "price", "rating")


class SearchArgs(Args):
    query: str = Field(default="", description="Words to look for in names, categories, descriptions.")
    max_price: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class ProductArgs(Args):
    product_id: int = id_field("The product's id.")


class AddToCartArgs(Args):
    product_id: int = id_field("The product's id.")
    quantity: int = Field(default=1, ge=1, le=1000)


class PlaceOrderArgs(Args):
    payment_card_id: int = id_field("A saved payment card's id.")
    address_id: int = id_field("A saved address's id.")


class OrderArgs(Args):
    order_id: int = id_field("The order's id.")


def search_products(ctx: ToolContext, args: SearchArgs) -> JsonObject:
    rows = ctx.rows(APP, "products")
    if args.max_price is not None:
        rows = [r for r in rows if float(r.get("price", 0.0)) <= args.max_price]
    found = search(rows, args.query, "product_id", "name", "category", "description")
    return {"products": [pick(r, *_SUMMARY) for r in found]}


def show_product(ctx: ToolContext, args: ProductArgs) -> JsonObject:
    return dict(ctx.find(APP, "products", args.product_id, "product"))


def add_product_to_cart(ctx: ToolContext, args: AddToCartArgs) -> JsonObject:
    product = ctx.find(APP, "products", args.product_id, "product")
    cart = ctx.rows(APP, "cart")
    line = next((c for c in cart if c["product_id"] == args.product_id), None)
    if line is None:
        line = {"product_id": args.product_id, "quantity": 0}
        cart.append(line)
    if line["quantity"] + args.quantity > int(product.get("stock", 0)):
        raise ToolFailed(f"only {product.get('stock', 0)} of product {args.product_id} in stock")
    line["quantity"] += args.quantity
    return {"product_id": args.product_id, "quantity": line["quantity"], "added": args.quantity}


def remove_product_from_cart(ctx: ToolContext, args: ProductArgs) -> JsonObject:
    cart = ctx.rows(APP, "cart")
    if not any(c["product_id"] == args.product_id for c in cart):
        raise ToolFailed(f"product {args.product_id} is not in the cart")
    cart[:] = [c for c in cart if c["product_id"] != args.product_id]
    return {"product_id": args.product_id, "removed": True}


def _cart_lines(ctx: ToolContext) -> list[dict[str, Any]]:
    lines = []
    for item in ctx.rows(APP, "cart"):
        product = ctx.find(APP, "products", item["product_id"], "product")
        lines.append(
            {
                "product_id": item["product_id"],
                "name": product.get("name", ""),
                "price": money(product.get("price", 0.0)),
                "quantity": item["quantity"],
            }
        )
    return lines


def show_cart(ctx: ToolContext, args: NoArgs) -> JsonObject:
    lines = _cart_lines(ctx)
    return {"cart_items": lines, "total": money(sum(li["price"] * li["quantity"] for li in lines))}


def show_payment_cards(ctx: ToolContext, args: NoArgs) -> JsonObject:
    return {"payment_cards": list(ctx.rows(APP, "payment_cards"))}


def show_addresses(ctx: ToolContext, args: NoArgs) -> JsonObject:
    return {"addresses": list(ctx.rows(APP, "addresses"))}


def place_order(ctx: ToolContext, args: PlaceOrderArgs) -> JsonObject:
    ctx.find(APP, "payment_cards", args.payment_card_id, "payment card")
    ctx.find(APP, "addresses", args.address_id, "address")
    lines = _cart_lines(ctx)
    if not lines:
        raise ToolFailed("the cart is empty: add products before placing an order")
    for line in lines:
        product = ctx.find(APP, "products", line["product_id"], "product")
        if int(product.get("stock", 0)) < line["quantity"]:
            raise ToolFailed(f"only {product.get('stock', 0)} of product {line['product_id']} in stock")
        product["stock"] = int(product.get("stock", 0)) - line["quantity"]
    items = [
        {
            "product_id": li["product_id"],
            "name": li["name"],
            "price": li["price"],
            "ordered_quantity": li["quantity"],
        }
        for li in lines
    ]
    total = money(sum(li["price"] * li["quantity"] for li in lines))
    order_id = ctx.new_id(APP, "orders", FIRST_ORDER_ID)
    ctx.rows(APP, "orders").append(
        {
            "order_id": order_id,
            "order_items": items,
            "payment_card_id": args.payment_card_id,
            "address_id": args.address_id,
            "total": total,
            "status": "placed",
            "placed_at": ctx.now,
        }
    )
    ctx.rows(APP, "cart").clear()
    return {
        "order_id": order_id,
        "order_items": [pick(i, "product_id", "ordered_quantity") for i in items],
        "total": total,
    }


def show_order(ctx: ToolContext, args: OrderArgs) -> JsonObject:
    return dict(ctx.find(APP, "orders", args.order_id, "order"))


def show_orders(ctx: ToolContext, args: NoArgs) -> JsonObject:
    orders = ctx.rows(APP, "orders")
    return {"orders": [pick(o, "order_id", "total", "status", "placed_at") for o in orders]}


TOOLS: tuple[EpisodeTool[Any], ...] = (
    app_tool(APP, "search_products", "Search the product catalogue.", SearchArgs, search_products),
    app_tool(APP, "show_product", "Show one product's details.", ProductArgs, show_product),
    app_tool(
        APP,
        "add_product_to_cart",
        "Add a quantity of a product to the cart.",
        AddToCartArgs,
        add_product_to_cart,
    ),
    app_tool(
        APP,
        "remove_product_from_cart",
        "Remove a product from the cart.",
        ProductArgs,
        remove_product_from_cart,
    ),
    app_tool(APP, "show_cart", "Show the cart and its total.", NoArgs, show_cart),
    app_tool(APP, "show_payment_cards", "List the saved payment cards.", NoArgs, show_payment_cards),
    app_tool(APP, "show_addresses", "List the saved addresses.", NoArgs, show_addresses),
    app_tool(
        APP, "place_order", "Order the whole cart with a saved card and address.", PlaceOrderArgs, place_order
    ),
    app_tool(APP, "show_order", "Show one order: its items and quantities.", OrderArgs, show_order),
    app_tool(APP, "show_orders", "List past orders.", NoArgs, show_orders),
)
