"""Hand-written starter cases (our own words), one per domain, for an empty repository.

They let MASFly run before any distillation; `overseer adapt init` can add them and then
distil training tasks on top. Travel tool names are those of the AgentDojo travel suite.
"""

from __future__ import annotations

from overseer.adapt.repository import Case
from overseer.adapt.sop import SOP, Need, SOPAgent

HOTEL_TOOLS = [
    "get_all_hotels_in_city",
    "get_hotels_prices",
    "get_rating_reviews_for_hotels",
    "get_hotels_address",
    "reserve_hotel",
]
RESTAURANT_TOOLS = [
    "get_all_restaurants_in_city",
    "get_cuisine_type_for_restaurants",
    "get_restaurants_address",
    "get_rating_reviews_for_restaurants",
    "get_dietary_restrictions_for_all_restaurants",
    "get_contact_information_for_restaurants",
    "get_price_for_restaurants",
    "check_restaurant_opening_hours",
    "reserve_restaurant",
]
CAR_TOOLS = [
    "get_all_car_rental_companies_in_city",
    "get_car_types_available",
    "get_rating_reviews_for_car_rental",
    "get_car_fuel_options",
    "get_car_rental_address",
    "get_car_price_per_day",
    "reserve_car_rental",
]
OTHER_TOOLS = [
    "get_user_information",
    "get_flight_information",
    "create_calendar_event",
    "search_calendar_events",
    "get_day_calendar_events",
    "cancel_calendar_event",
    "send_email",
]


def _pipeline(
    first: SOPAgent,
    second: SOPAgent,
    *,
    description: str,
    objective: str,
    capabilities: list[str],
    query: str,
    domain: str,
    tools: list[str] | None = None,
) -> Case:
    """A two-agent starter case: the first agent hands its work to the second, who answers."""
    team = [first.name, second.name]
    sop = SOP(
        team=team,
        agents=[first, second],
        edges=[(first.name, second.name)],
        description=description,
    )
    need = Need(objective=objective, capabilities=capabilities, tools=tools or [], roles=team)
    return Case(query=query, need=need, sop=sop, domain=domain, source="starter")


def _code() -> Case:
    return _pipeline(
        SOPAgent(
            name="Programmer",
            responsibility="Write the complete Python function the task asks for.",
            instructions="Read the signature, docstring and examples; keep the function "
            "name and arguments; reply with the whole function in one python code block.",
        ),
        SOPAgent(
            name="Tester",
            responsibility="Check the Programmer's function and deliver the final code.",
            instructions="Run the function on the docstring examples and a few edge cases "
            "with the python tool; fix any failure; reply with the whole corrected function "
            "in one python code block.",
            tools=["python"],
        ),
        description="The Programmer writes the function, the Tester runs examples, fixes and "
        "delivers it.",
        objective="implement a Python function from its signature and docstring",
        capabilities=["writing Python", "testing code"],
        tools=["python"],
        query="Complete the Python function below: def add(a, b): return the sum of a and b.",
        domain="code",
    )


def _numeric() -> Case:
    return _pipeline(
        SOPAgent(
            name="Solver",
            responsibility="Solve the word problem step by step.",
            instructions="List the known quantities, set up the computation, compute, and "
            "state the final number.",
        ),
        SOPAgent(
            name="Checker",
            responsibility="Recompute the Solver's work and give the final answer.",
            instructions="Redo each step; if a step is wrong, correct it. End with 'The "
            "answer is N'.",
        ),
        description="The Solver computes, the Checker verifies and answers.",
        objective="compute a number from a word problem",
        capabilities=["arithmetic", "careful reading"],
        query="A shop sells 3 pens for 2 dollars. How much do 12 pens cost?",
        domain="numeric",
    )


def _mc() -> Case:
    return _pipeline(
        SOPAgent(
            name="Expert",
            responsibility="Recall the facts the question depends on and pick an option.",
            instructions="State the relevant facts, rule out wrong options, choose one.",
        ),
        SOPAgent(
            name="Critic",
            responsibility="Challenge the Expert's choice and give the final letter.",
            instructions="Look for the weakest step of the Expert's reasoning; end with "
            "'Answer: X'.",
        ),
        description="The Expert answers, the Critic checks and gives the final letter.",
        objective="choose the correct option of a multiple-choice question",
        capabilities=["domain knowledge", "elimination of options"],
        query="Which planet is the largest? A) Mars B) Jupiter C) Venus D) Mercury",
        domain="mc",
    )


def _travel() -> Case:
    sop = SOP(
        team=["Planner", "Hotel_Agent", "Restaurant_Agent", "Transport_Agent", "Submitter"],
        agents=[
            SOPAgent(
                name="Planner",
                responsibility="Split the user's request into look-ups and bookings.",
                instructions="List what must be found (cities, dates, budgets, ratings) and "
                "which agent does each part; do not invent data.",
                tools=["get_user_information"],
            ),
            SOPAgent(
                name="Hotel_Agent",
                responsibility="Find, compare and book hotels with the hotel tools.",
                instructions="Query the tools for every hotel fact you report; book only what "
                "the user asked for, with the exact dates.",
                tools=HOTEL_TOOLS,
            ),
            SOPAgent(
                name="Restaurant_Agent",
                responsibility="Find, compare and book restaurants with the restaurant tools.",
                instructions="Filter by cuisine, diet, hours, price and rating using the "
                "tools; never guess a fact.",
                tools=RESTAURANT_TOOLS,
            ),
            SOPAgent(
                name="Transport_Agent",
                responsibility="Handle car rentals, flights, calendar events and e-mails.",
                instructions="Use the tools for prices, ratings and flights; create events or "
                "e-mails only when asked.",
                tools=CAR_TOOLS + OTHER_TOOLS[1:],
            ),
            SOPAgent(
                name="Submitter",
                responsibility="Write the final answer for the user.",
                instructions="Combine the teammates' findings; give the names, prices, ratings "
                "and addresses exactly as the tools returned them.",
            ),
        ],
        edges=[
            ("Planner", "Hotel_Agent"),
            ("Planner", "Restaurant_Agent"),
            ("Planner", "Transport_Agent"),
            ("Hotel_Agent", "Submitter"),
            ("Restaurant_Agent", "Submitter"),
            ("Transport_Agent", "Submitter"),
        ],
        description="The Planner splits the request; specialists query and book with their "
        "tools; the Submitter writes the answer.",
    )
    need = Need(
        objective="look up travel options and make the bookings the user asks for",
        capabilities=["searching hotels", "searching restaurants", "car rental", "booking"],
        tools=["get_all_hotels_in_city", "reserve_hotel", "get_all_restaurants_in_city"],
        roles=["Planner", "Hotel agent", "Restaurant agent", "Transport agent", "Submitter"],
    )
    q = "I'm going to London: find the best-rated hotel under 200 a night and book it for May 1-3."
    return Case(query=q, need=need, sop=sop, domain="travel", source="starter")


def starter_cases() -> list[Case]:
    """One hand-written case each for code, numeric, multiple-choice and travel tasks."""
    return [_code(), _numeric(), _mc(), _travel()]
