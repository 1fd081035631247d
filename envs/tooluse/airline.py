"""tau2-bench airline domain: pydantic data model and tools, as in ``tau2/domains/airline``.

Lookups are exact (tau2-bench's original text benchmark); the current time is fixed at
2024-05-15 15:00 EST as in tau2-bench. Seats are not released on cancellation and not taken on
flight changes: tau2-bench does neither, and reward hashes depend on it.

Tool bodies repeat each other where the original's do (tau-bench and tau2 write each tool out in
full): they are ports kept line for line on purpose, so a behaviour difference shows in a diff
against the original, and ``duplicates`` lists them.
"""

from __future__ import annotations

from copy import deepcopy
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentgym.envs.tooluse.data import read_json
from agentgym.envs.tooluse.db import Database
from agentgym.envs.tooluse.retail import calculate
from agentgym.envs.tooluse.toolkit import ToolKind, Toolkit, tool

FlightType = Literal["round_trip", "one_way"]
CabinClass = Literal["business", "economy", "basic_economy"]
Insurance = Literal["yes", "no"]
NOW = "2024-05-15T15:00:00"


class AirportCode(BaseModel):
    iata: str
    city: str


class Name(BaseModel):
    first_name: str
    last_name: str


class Address(BaseModel):
    address1: str
    address2: str | None = None
    city: str
    country: str
    state: str
    zip: str


class Payment(BaseModel):
    payment_id: str
    amount: int


class PaymentMethodBase(BaseModel):
    source: str
    id: str


class CreditCard(PaymentMethodBase):
    source: Literal["credit_card"]
    brand: str
    last_four: str


class GiftCard(PaymentMethodBase):
    source: Literal["gift_card"]
    amount: float
    id: str


class Certificate(PaymentMethodBase):
    source: Literal["certificate"]
    amount: float


PaymentMethod = CreditCard | GiftCard | Certificate


class Passenger(BaseModel):
    first_name: str
    last_name: str
    dob: str


class FlightDateStatusAvailable(BaseModel):
    status: Literal["available"]
    available_seats: dict[CabinClass, int]
    prices: dict[CabinClass, int]


class FlightDataStatusOnTime(BaseModel):
    status: Literal["on time"]
    estimated_departure_time_est: str
    estimated_arrival_time_est: str


class FlightDataStatusFlying(BaseModel):
    status: Literal["flying"]
    actual_departure_time_est: str
    estimated_arrival_time_est: str


class FlightDateStatusLanded(BaseModel):
    status: Literal["landed"]
    actual_departure_time_est: str
    actual_arrival_time_est: str


class FlightDateStatusCancelled(BaseModel):
    status: Literal["cancelled"]


class FlightDateStatusDelayed(BaseModel):
    status: Literal["delayed"]
    estimated_departure_time_est: str
    estimated_arrival_time_est: str


FlightDateStatus = (
    FlightDateStatusAvailable
    | FlightDateStatusLanded
    | FlightDateStatusCancelled
    | FlightDateStatusDelayed
    | FlightDataStatusFlying
    | FlightDataStatusOnTime
)


class FlightBase(BaseModel):
    flight_number: str
    origin: str
    destination: str


class Flight(FlightBase):
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    dates: dict[str, FlightDateStatus]


class DirectFlight(FlightBase):
    status: Literal["available"]
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    date: str | None = None
    available_seats: dict[CabinClass, int]
    prices: dict[CabinClass, int]


class ReservationFlight(FlightBase):
    date: str
    price: int


class FlightInfo(BaseModel):
    flight_number: str = Field(description="Flight number, such as 'HAT001'.")
    date: str = Field(
        description="The date for the flight in the format 'YYYY-MM-DD', such as '2024-05-01'."
    )


class User(BaseModel):
    user_id: str
    name: Name
    address: Address
    email: str
    dob: str
    payment_methods: dict[str, PaymentMethod]
    saved_passengers: list[Passenger]
    membership: Literal["gold", "silver", "regular"]
    reservations: list[str]


class Reservation(BaseModel):
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: FlightType
    cabin: CabinClass
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: Insurance
    status: Literal["cancelled"] | None = None


class FlightDB(BaseModel):
    """The whole airline database (validates ``db.json``)."""

    flights: dict[str, Flight]
    users: dict[str, User]
    reservations: dict[str, Reservation]


@cache
def base_tables() -> dict[str, dict[str, BaseModel]]:
    """The validated airline database, loaded once per process and shared by every episode."""
    db = FlightDB.model_validate(read_json("tau2/airline/db.json"))
    return {
        "flights": dict(db.flights),
        "users": dict(db.users),
        "reservations": dict(db.reservations),
    }


AIRPORTS = [
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"),
    ("MIA", "Miami"), ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"),
    ("LAS", "Las Vegas"), ("MCO", "Orlando"), ("EWR", "Newark"), ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"), ("DTW", "Detroit"), ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
]  # fmt: skip


def _as_models(items: list[Any], model: type[BaseModel]) -> list[Any]:
    """tau2's conversion: a list of dicts becomes models; any other list is kept as it is."""
    if all(isinstance(item, dict) for item in items):
        return [model(**item) for item in items]
    return list(items)


class AirlineTools(Toolkit):
    """All the tools for the airline domain."""

    def _get_user(self, user_id: str) -> User:
        if user_id not in self.db["users"]:
            raise ValueError(f"User {user_id} not found")
        return self.db["users"][user_id]  # type: ignore[no-any-return]

    def _get_reservation(self, reservation_id: str) -> Reservation:
        if reservation_id not in self.db["reservations"]:
            raise ValueError(f"Reservation {reservation_id} not found")
        return self.db["reservations"][reservation_id]  # type: ignore[no-any-return]

    def _get_flight(self, flight_number: str) -> Flight:
        if flight_number not in self.db["flights"]:
            raise ValueError(f"Flight {flight_number} not found")
        return self.db["flights"].peek(flight_number)  # type: ignore[no-any-return]

    def _get_flight_instance(self, flight_number: str, date: str, write: bool = False) -> Any:
        flight = self.db["flights"][flight_number] if write else self._get_flight(flight_number)
        if date not in flight.dates:
            raise ValueError(f"Flight {flight_number} not found on date {date}")
        return flight.dates[date]

    def _new_reservation_id(self) -> str:
        for reservation_id in ["HATHAT", "HATHAU", "HATHAV"]:
            if reservation_id not in self.db["reservations"]:
                return reservation_id
        raise ValueError("Too many reservations")

    def _search_direct_flight(
        self,
        date: str,
        origin: str | None = None,
        destination: str | None = None,
        leave_after: str | None = None,
    ) -> list[DirectFlight]:
        results = []
        for flight in self.db["flights"].peek_values():
            if (
                (origin is None or flight.origin == origin)
                and (destination is None or flight.destination == destination)
                and (date in flight.dates)
                and (flight.dates[date].status == "available")
                and (leave_after is None or flight.scheduled_departure_time_est >= leave_after)
            ):
                results.append(
                    DirectFlight(
                        flight_number=flight.flight_number,
                        origin=flight.origin,
                        destination=flight.destination,
                        status="available",
                        scheduled_departure_time_est=flight.scheduled_departure_time_est,
                        scheduled_arrival_time_est=flight.scheduled_arrival_time_est,
                        available_seats=flight.dates[date].available_seats,
                        prices=flight.dates[date].prices,
                    )
                )
        return results

    def _payment_for_update(self, user: User, payment_id: str, total_price: int) -> Payment | None:
        if payment_id not in user.payment_methods:
            raise ValueError("Payment method not found")
        payment_method = user.payment_methods[payment_id]
        if payment_method.source == "certificate":
            raise ValueError("Certificate cannot be used to update reservation")
        if isinstance(payment_method, GiftCard) and payment_method.amount < total_price:
            raise ValueError("Gift card balance is not enough")
        if isinstance(payment_method, GiftCard):
            payment_method.amount -= total_price
        if total_price != 0:
            return Payment(payment_id=payment_id, amount=total_price)
        return None

    @tool(ToolKind.WRITE)
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: FlightType,
        cabin: CabinClass,
        flights: list[FlightInfo | dict[str, Any]],
        passengers: list[Passenger | dict[str, Any]],
        payment_methods: list[Payment | dict[str, Any]],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: Insurance,
    ) -> Reservation:
        """Book a reservation.

        Args:
            user_id: The ID of the user to book the reservation such as 'sara_doe_496'`.
            origin: The IATA code for the origin city such as 'SFO'.
            destination: The IATA code for the destination city such as 'JFK'.
            flight_type: The type of flight such as 'one_way' or 'round_trip'.
            cabin: The cabin class such as 'basic_economy', 'economy', or 'business'.
            flights: An array of objects containing details about each piece of flight.
            passengers: An array of objects containing details about each passenger.
            payment_methods: An array of objects containing details about each payment method.
            total_baggages: The total number of baggage items to book the reservation.
            nonfree_baggages: The number of non-free baggage items to book the reservation.
            insurance: Whether the reservation has insurance.
        """
        infos = _as_models(flights, FlightInfo)
        people = _as_models(passengers, Passenger)
        payments = _as_models(payment_methods, Payment)
        user = self._get_user(user_id)
        reservation = Reservation(
            reservation_id=self._new_reservation_id(),
            user_id=user_id,
            origin=origin,
            destination=destination,
            flight_type=flight_type,
            cabin=cabin,
            flights=[],
            passengers=deepcopy(people),
            payment_history=deepcopy(payments),
            created_at=NOW,
            total_baggages=total_baggages,
            nonfree_baggages=nonfree_baggages,
            insurance=insurance,
        )
        total_price = 0
        booked: list[tuple[str, str]] = []
        for info in infos:
            flight = self._get_flight(info.flight_number)
            date_data = self._get_flight_instance(info.flight_number, info.date)
            if not isinstance(date_data, FlightDateStatusAvailable):
                raise ValueError(f"Flight {info.flight_number} not available on date {info.date}")
            if date_data.available_seats[cabin] < len(people):
                raise ValueError(f"Not enough seats on flight {info.flight_number}")
            price = date_data.prices[cabin]
            reservation.flights.append(
                ReservationFlight(
                    origin=flight.origin,
                    destination=flight.destination,
                    flight_number=info.flight_number,
                    date=info.date,
                    price=price,
                )
            )
            booked.append((info.flight_number, info.date))
            total_price += price * len(people)
        if insurance == "yes":
            total_price += 30 * len(people)
        total_price += 50 * nonfree_baggages
        for payment in payments:
            if payment.payment_id not in user.payment_methods:
                raise ValueError(f"Payment method {payment.payment_id} not found")
            method = user.payment_methods[payment.payment_id]
            if method.source in {"gift_card", "certificate"} and method.amount < payment.amount:
                raise ValueError(f"Not enough balance in payment method {payment.payment_id}")
        total_payment = sum(payment.amount for payment in payments)
        if total_payment != total_price:
            raise ValueError(
                f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}"
            )
        for payment in payments:
            method = user.payment_methods[payment.payment_id]
            if method.source == "gift_card":
                method.amount -= payment.amount
            elif method.source == "certificate":
                user.payment_methods.pop(payment.payment_id)
        for flight_number, date in booked:
            self._get_flight_instance(flight_number, date, write=True).available_seats[cabin] -= (
                len(people)
            )
        self.db["reservations"][reservation.reservation_id] = reservation
        self.db["users"][user_id].reservations.append(reservation.reservation_id)
        return reservation

    @tool(ToolKind.GENERIC)
    def calculate(self, expression: str) -> str:
        """Calculate the result of a mathematical expression.

        Args:
            expression: The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, operators (+, -, *, /), parentheses, and spaces.
        """
        return calculate(expression)

    @tool(ToolKind.WRITE)
    def cancel_reservation(self, reservation_id: str) -> Reservation:
        """Cancel the whole reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
        """
        reservation = self._get_reservation(reservation_id)
        refunds = [
            Payment(payment_id=p.payment_id, amount=-p.amount) for p in reservation.payment_history
        ]
        reservation.payment_history.extend(refunds)
        reservation.status = "cancelled"
        return reservation

    @tool(ToolKind.READ)
    def get_reservation_details(self, reservation_id: str) -> Reservation:
        """Get the details of a reservation.

        Args:
            reservation_id: The reservation ID, such as '8JX2WO'.
        """
        if reservation_id not in self.db["reservations"]:
            raise ValueError(f"Reservation {reservation_id} not found")
        return self.db["reservations"].peek(reservation_id)  # type: ignore[no-any-return]

    @tool(ToolKind.READ)
    def get_user_details(self, user_id: str) -> User:
        """Get the details of a user, including their reservations.

        Args:
            user_id: The user ID, such as 'sara_doe_496'.
        """
        if user_id not in self.db["users"]:
            raise ValueError(f"User {user_id} not found")
        return self.db["users"].peek(user_id)  # type: ignore[no-any-return]

    @tool(ToolKind.READ)
    def list_all_airports(self) -> list[AirportCode]:
        """Returns a list of all available airports."""
        return [AirportCode(iata=iata, city=city) for iata, city in AIRPORTS]

    @tool(ToolKind.READ)
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[DirectFlight]:
        """Search for direct flights between two cities on a specific date.

        Args:
            origin: The origin city airport in three letters, such as 'JFK'.
            destination: The destination city airport in three letters, such as 'LAX'.
            date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.
        """
        return self._search_direct_flight(date=date, origin=origin, destination=destination)

    @tool(ToolKind.READ)
    def search_onestop_flight(
        self, origin: str, destination: str, date: str
    ) -> list[list[DirectFlight]]:
        """Search for one-stop flights between two cities on a specific date.

        Args:
            origin: The origin city airport in three letters, such as 'JFK'.
            destination: The destination city airport in three letters, such as 'LAX'.
            date: The date of the flight in the format 'YYYY-MM-DD', such as '2024-05-01'.
        """
        results = []
        for first in self._search_direct_flight(date=date, origin=origin):
            first.date = date
            date2 = (
                f"2024-05-{int(date[-2:]) + 1}"
                if "+1" in first.scheduled_arrival_time_est
                else date
            )
            for second in self._search_direct_flight(
                date=date2,
                origin=first.destination,
                destination=destination,
                leave_after=first.scheduled_arrival_time_est,
            ):
                second.date = date2
                results.append([first, second])
        return results

    @tool(ToolKind.WRITE)
    def send_certificate(self, user_id: str, amount: int) -> str:
        """Send a certificate to a user. Be careful!

        Args:
            user_id: The ID of the user to book the reservation, such as 'sara_doe_496'.
            amount: The amount of the certificate to send.
        """
        user = self._get_user(user_id)
        for payment_id in [f"certificate_{i}" for i in (3221322, 3221323, 3221324)]:
            if payment_id not in user.payment_methods:
                user.payment_methods[payment_id] = Certificate(
                    id=payment_id, amount=amount, source="certificate"
                )
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ValueError("Too many certificates")

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user explicitly asks for a human agent, or given the policy and the available tools, you cannot solve the user's issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"

    @tool(ToolKind.WRITE)
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> Reservation:
        """Update the baggage information of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'
            total_baggages: The updated total number of baggage items included in the reservation.
            nonfree_baggages: The updated number of non-free baggage items included in the reservation.
            payment_id: The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', 'certificate_7815826'.
        """
        reservation = self._get_reservation(reservation_id)
        user = self._get_user(reservation.user_id)
        total_price = 50 * max(0, nonfree_baggages - reservation.nonfree_baggages)
        payment = self._payment_for_update(user, payment_id, total_price)
        if payment is not None:
            reservation.payment_history.append(payment)
        reservation.total_baggages = total_baggages
        reservation.nonfree_baggages = nonfree_baggages
        return reservation

    @tool(ToolKind.WRITE)
    def update_reservation_flights(
        self,
        reservation_id: str,
        cabin: CabinClass,
        flights: list[FlightInfo | dict[str, Any]],
        payment_id: str,
    ) -> Reservation:
        """Update the flight information of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            cabin: The cabin class of the reservation
            flights: An array of objects containing details about each piece of flight in the ENTIRE new reservation. Even if the a flight segment is not changed, it should still be included in the array.
            payment_id: The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', 'certificate_7815826'.
        """
        infos = _as_models(flights, FlightInfo)
        reservation = self._get_reservation(reservation_id)
        user = self._get_user(reservation.user_id)
        total_price = 0
        new_flights = []
        for info in infos:
            number, date = info.flight_number, info.date
            kept = next(
                (
                    f
                    for f in reservation.flights
                    if f.flight_number == number and f.date == date and cabin == reservation.cabin
                ),
                None,
            )
            if kept:
                total_price += kept.price * len(reservation.passengers)
                new_flights.append(kept)
                continue
            flight = self._get_flight(number)
            date_data = self._get_flight_instance(number, date)
            if not isinstance(date_data, FlightDateStatusAvailable):
                raise ValueError(f"Flight {number} not available on date {date}")
            if date_data.available_seats[cabin] < len(reservation.passengers):
                raise ValueError(f"Not enough seats on flight {number}")
            new_flight = ReservationFlight(
                flight_number=number,
                date=date,
                price=date_data.prices[cabin],
                origin=flight.origin,
                destination=flight.destination,
            )
            total_price += new_flight.price * len(reservation.passengers)
            new_flights.append(new_flight)
        total_price -= sum(f.price for f in reservation.flights) * len(reservation.passengers)
        payment = self._payment_for_update(user, payment_id, total_price)
        if payment is not None:
            reservation.payment_history.append(payment)
        reservation.flights = new_flights
        reservation.cabin = cabin
        return reservation

    @tool(ToolKind.WRITE)
    def update_reservation_passengers(
        self, reservation_id: str, passengers: list[Passenger | dict[str, Any]]
    ) -> Reservation:
        """Update the passenger information of a reservation.

        Args:
            reservation_id: The reservation ID, such as 'ZFA04Y'.
            passengers: An array of objects containing details about each passenger.
        """
        people = _as_models(passengers, Passenger)
        reservation = self._get_reservation(reservation_id)
        if len(people) != len(reservation.passengers):
            raise ValueError("Number of passengers does not match")
        reservation.passengers = deepcopy(people)
        return reservation

    @tool(ToolKind.READ)
    def get_flight_status(self, flight_number: str, date: str) -> str:
        """Get the status of a flight.

        Args:
            flight_number: The flight number.
            date: The date of the flight.
        """
        return str(self._get_flight_instance(flight_number, date).status)


def database() -> Database:
    """A fresh episode view of the airline database (shares the process-wide base)."""
    return Database(base_tables(), "tau2")
