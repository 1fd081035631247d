"""tau2-bench telecom, agent side: customers, lines, plans, bills, devices, and the agent's tools.

Semantics follow ``tau2/domains/telecom`` (``data_model.py``, ``tools.py``): the same records,
checks, error texts and results; "today" is tau2's fixed 2025-02-25. Deliberate differences,
none of which changes a grade (telecom tasks are graded by env assertions and actions only):

- tau2 names a new draft bill ``B`` + 8 random hex digits (``uuid4``), so two replays of the
  same actions differ; here the digits hash the customer and their bill count (same shape).
- tau2 replays the gold actions for its reference database without ``sync_tools`` after each;
  here every call is followed by :func:`sync`, in the reference as in the episode.
- tau2's ``connect_vpn`` hands every phone one class-level ``VpnDetails`` object, which
  ``break_vpn`` degrades for every later episode of the process; here each phone has its own
  profile (within an episode a reconnect after ``break_vpn`` stays poor, as in tau2).
"""

from __future__ import annotations

import datetime
import hashlib
from enum import Enum
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentgym.envs.tooluse.data import read_json
from agentgym.envs.tooluse.db import ModelDatabase
from agentgym.envs.tooluse.toolkit import ToolKind, Toolkit, tool

TODAY = datetime.date(2025, 2, 25)
"""tau2's ``get_today()`` for telecom (the policy says "The current time is 2025-02-25")."""


class Record(BaseModel):
    """tau2's ``BaseModelNoExtra``."""

    model_config = ConfigDict(extra="forbid")


class Address(Record):
    street: str
    city: str
    state: str
    zip_code: str


class Plan(Record):
    plan_id: str
    name: str
    data_limit_gb: float
    price_per_month: float
    data_refueling_price_per_gb: float


class DeviceType(str, Enum):
    PHONE = "phone"
    ROUTER = "router"
    TABLET = "tablet"
    WATCH = "watch"
    OTHER = "other"


class Device(Record):
    device_id: str
    device_type: DeviceType
    model: str
    imei: str | None = None
    is_esim_capable: bool
    activated: bool = False
    activation_date: datetime.datetime | None = None
    last_esim_transfer_date: datetime.datetime | None = None


class LineStatus(str, Enum):
    ACTIVE = "Active"
    SUSPENDED = "Suspended"
    PENDING_ACTIVATION = "Pending Activation"
    CLOSED = "Closed"


class Line(Record):
    line_id: str
    phone_number: str
    status: LineStatus = LineStatus.PENDING_ACTIVATION
    plan_id: str
    device_id: str | None = None
    data_used_gb: float = 0.0
    data_refueling_gb: float = 0.0
    roaming_enabled: bool = False
    contract_end_date: datetime.date | None = None
    last_plan_change_date: datetime.date | None = None
    last_sim_replacement_date: datetime.date | None = None
    suspension_start_date: datetime.date | None = None


class LineItem(Record):
    description: str
    amount: float
    date: datetime.date
    item_type: str


class BillStatus(str, Enum):
    DRAFT = "Draft"
    ISSUED = "Issued"
    AWAITING_PAYMENT = "Awaiting Payment"
    PAID = "Paid"
    OVERDUE = "Overdue"
    DISPUTED = "Disputed"


class Bill(Record):
    bill_id: str
    customer_id: str
    period_start: datetime.date
    period_end: datetime.date
    issue_date: datetime.date
    total_due: float
    due_date: datetime.date
    line_items: list[LineItem] = Field(default_factory=list)
    status: BillStatus = BillStatus.DRAFT


class AccountStatus(str, Enum):
    ACTIVE = "Active"
    SUSPENDED = "Suspended"
    PENDING_VERIFICATION = "Pending Verification"
    CLOSED = "Closed"


class PaymentMethodType(str, Enum):
    CREDIT_CARD = "Credit Card"
    DEBIT_CARD = "Debit Card"
    PAYPAL = "PayPal"


class PaymentMethod(Record):
    method_type: PaymentMethodType
    account_number_last_4: str
    expiration_date: str


class Customer(Record):
    customer_id: str
    full_name: str
    date_of_birth: str
    email: str
    phone_number: str
    address: Address
    account_status: AccountStatus = AccountStatus.PENDING_VERIFICATION
    payment_methods: list[PaymentMethod] = Field(default_factory=list)
    line_ids: list[str] = Field(default_factory=list)
    bill_ids: list[str] = Field(default_factory=list)
    created_at: datetime.datetime = datetime.datetime(2025, 1, 1)
    last_extension_date: datetime.date | None = None
    goodwill_credit_used_this_year: float = 0.0


class TelecomDB(Record):
    """tau2's ``TelecomDB`` (lists of records, in the order of ``db.toml``)."""

    plans: list[Plan] = Field(default_factory=list)
    customers: list[Customer] = Field(default_factory=list)
    lines: list[Line] = Field(default_factory=list)
    bills: list[Bill] = Field(default_factory=list)
    devices: list[Device] = Field(default_factory=list)


@cache
def base_db() -> TelecomDB:
    """The shipped database (tau2's ``db.toml``, converted to JSON)."""
    return TelecomDB.model_validate(read_json("tau2/telecom/db.json"))


@cache
def _base_db_json() -> str:
    return base_db().model_dump_json()


def database() -> ModelDatabase:
    """A fresh episode database over the shared base."""
    return ModelDatabase(base_db(), _base_db_json())


def _first(records: list[Any], field: str, value: str, what: str) -> Any:
    for record in records:
        if getattr(record, field) == value:
            return record
    raise ValueError(f"{what} with {'ID' if field.endswith('_id') else field} {value} not found")


class TelecomTools(Toolkit):
    """The telecom agent's tools (and the non-tool functions tasks use to set up and check)."""

    @property
    def state(self) -> TelecomDB:
        """The episode's own database model."""
        return self.db.data  # type: ignore[attr-defined,no-any-return]

    # ------------------------------------------------------------------ lookups
    @tool(ToolKind.READ)
    def get_customer_by_phone(self, phone_number: str) -> Customer:
        """Finds a customer by their primary contact or line phone number.

        Args:
            phone_number: The phone number to search for.
        """
        for customer in self.state.customers:
            if customer.phone_number == phone_number:
                return customer
            for line_id in customer.line_ids:
                if self._line(line_id).phone_number == phone_number:
                    return customer
        raise ValueError(f"Customer with phone number {phone_number} not found")

    @tool(ToolKind.READ)
    def get_customer_by_id(self, customer_id: str) -> Customer:
        """Retrieves a customer directly by their unique ID.

        Args:
            customer_id: The unique identifier of the customer.
        """
        for customer in self.state.customers:
            if customer.customer_id == customer_id:
                return customer
        raise ValueError(f"Customer with ID {customer_id} not found")

    @tool(ToolKind.READ)
    def get_customer_by_name(self, full_name: str, dob: str) -> list[Customer]:
        """Searches for customers by name and DOB. May return multiple matches if names are similar, DOB helps disambiguate.

        Args:
            full_name: The full name of the customer.
            dob: Date of birth for verification, in the format YYYY-MM-DD.
        """
        return [
            c
            for c in self.state.customers
            if c.full_name.lower() == full_name.lower() and c.date_of_birth == dob
        ]

    @tool(ToolKind.READ)
    def get_details_by_id(self, id: str) -> Any:
        """Retrieves the details for a given ID. The ID must be a valid ID for a Customer, Line, Device, Bill, or Plan.

        Args:
            id: The ID of the object to retrieve.
        """
        if id.startswith("L"):
            return self._line(id)
        if id.startswith("D"):
            return _first(self.state.devices, "device_id", id, "Device")
        if id.startswith("B"):
            return self._bill(id)
        if id.startswith("C"):
            return self.get_customer_by_id(id)
        if id.startswith("P"):
            return self._plan(id)
        raise ValueError(f"Unknown ID format or type: {id}")

    def _line(self, line_id: str) -> Line:
        return _first(self.state.lines, "line_id", line_id, "Line")  # type: ignore[no-any-return]

    def line_by_phone(self, phone_number: str) -> Line:
        """The line with this phone number (tau2's ``_get_line_by_phone``)."""
        for line in self.state.lines:
            if line.phone_number == phone_number:
                return line
        raise ValueError(f"Line with phone number {phone_number} not found")

    def _plan(self, plan_id: str) -> Plan:
        return _first(self.state.plans, "plan_id", plan_id, "Plan")  # type: ignore[no-any-return]

    def plan_of(self, line: Line) -> Plan:
        """The plan of a line."""
        return self._plan(line.plan_id)

    def _bill(self, bill_id: str) -> Bill:
        return _first(self.state.bills, "bill_id", bill_id, "Bill")  # type: ignore[no-any-return]

    def _target_line(self, customer_id: str, line_id: str) -> Line:
        customer = self.get_customer_by_id(customer_id)
        if line_id not in customer.line_ids:
            raise ValueError(f"Line {line_id} not found for customer {customer_id}")
        return self._line(line_id)

    # ------------------------------------------------------------------ lines
    @tool(ToolKind.WRITE)
    def suspend_line(self, customer_id: str, line_id: str, reason: str) -> dict[str, Any]:
        """Suspends a specific line (max 6 months). Checks: Line status must be Active. Logic: Sets line status to Suspended, records suspension_start_date.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to suspend.
            reason: Reason for suspension.
        """
        line = self._target_line(customer_id, line_id)
        if line.status != LineStatus.ACTIVE:
            raise ValueError("Line must be active to suspend")
        line.status = LineStatus.SUSPENDED
        line.suspension_start_date = TODAY
        return {
            "message": "Line suspended successfully. $5/month holding fee will apply.",
            "line": line,
        }

    @tool(ToolKind.WRITE)
    def resume_line(self, customer_id: str, line_id: str) -> dict[str, Any]:
        """Resumes a suspended line. Checks: Line status must be Suspended or Pending Activation. Logic: Sets line status to Active, clears suspension_start_date.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to resume.
        """
        line = self._target_line(customer_id, line_id)
        if line.status not in (LineStatus.SUSPENDED, LineStatus.PENDING_ACTIVATION):
            raise ValueError("Line must be suspended to resume")
        line.status = LineStatus.ACTIVE
        line.suspension_start_date = None
        return {"message": "Line resumed successfully", "line": line}

    # ------------------------------------------------------------------ bills
    @tool(ToolKind.READ)
    def get_bills_for_customer(self, customer_id: str, limit: int = 12) -> list[Bill]:
        """Retrieves a list of the customer's bills, most recent first.

        Args:
            customer_id: ID of the customer.
            limit: Maximum number of bills to return.
        """
        customer = self.get_customer_by_id(customer_id)
        bills = [self._bill(b) for b in customer.bill_ids]
        return sorted(bills, key=lambda b: b.issue_date, reverse=True)[:limit]

    @tool(ToolKind.WRITE)
    def send_payment_request(self, customer_id: str, bill_id: str) -> str:
        """Sends a payment request to the customer for a specific bill. Checks: Customer exists; Bill exists and belongs to the customer; No other bills are already awaiting payment for this customer. Logic: Sets bill status to AWAITING_PAYMENT and notifies customer. Warning: This method does not check if the bill is already PAID. Always check the bill status before calling this method.

        Args:
            customer_id: ID of the customer who owns the bill.
            bill_id: ID of the bill to send payment request for.
        """
        customer = self.get_customer_by_id(customer_id)
        if self.bills_awaiting_payment(customer):
            raise ValueError("A bill is already awaiting payment for this customer")
        if bill_id not in customer.bill_ids:
            raise ValueError(f"Bill {bill_id} not found for customer {customer_id}")
        bill = self._bill(bill_id)
        bill.status = BillStatus.AWAITING_PAYMENT
        return f"Payment request sent to the customer for bill {bill.bill_id}"

    def bills_awaiting_payment(self, customer: Customer) -> list[Bill]:
        """The customer's bills in the Awaiting Payment status."""
        bills = [self._bill(b) for b in customer.bill_ids]
        return [b for b in bills if b.status == BillStatus.AWAITING_PAYMENT]

    def set_bill_paid(self, bill_id: str) -> str:
        """Marks a bill paid (the phone's payment reaching the carrier)."""
        self._bill(bill_id).status = BillStatus.PAID
        return f"Bill {bill_id} set to paid"

    def _charge(self, customer_id: str, amount: float, description: str) -> None:
        """Adds a line item to the customer's draft bill (made for next month if none)."""
        customer = self.get_customer_by_id(customer_id)
        draft = next(
            (b for b in map(self._bill, customer.bill_ids) if b.status == BillStatus.DRAFT), None
        )
        if draft is None:
            start = (TODAY.replace(day=1) + datetime.timedelta(days=32)).replace(day=1)
            end = start.replace(
                month=start.month + 1 if start.month < 12 else 1,
                year=start.year if start.month < 12 else start.year + 1,
            ) - datetime.timedelta(days=1)
            digest = hashlib.sha256(f"{customer_id}:{len(customer.bill_ids)}".encode())
            draft = Bill(
                bill_id=f"B{digest.hexdigest()[:8]}",
                customer_id=customer_id,
                period_start=start,
                period_end=end,
                issue_date=start,
                total_due=0,
                due_date=start + datetime.timedelta(days=14),
                status=BillStatus.DRAFT,
            )
            self.state.bills.append(draft)
            customer.bill_ids.append(draft.bill_id)
        draft.line_items.append(
            LineItem(
                description=description,
                amount=amount,
                date=TODAY,
                item_type="Credit" if amount < 0 else "Charge",
            )
        )
        draft.total_due += amount

    # ------------------------------------------------------------------ usage and roaming
    @tool(ToolKind.READ)
    def get_data_usage(self, customer_id: str, line_id: str) -> dict[str, Any]:
        """Retrieves current billing cycle data usage for a line, including data refueling amount, data limit, and cycle end date.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to check usage for.
        """
        line = self._target_line(customer_id, line_id)
        plan = self._plan(line.plan_id)
        cycle_end = datetime.date(
            TODAY.year, TODAY.month + 1 if TODAY.month < 12 else 1, 1
        ) - datetime.timedelta(days=1)
        return {
            "line_id": line_id,
            "data_used_gb": line.data_used_gb,
            "data_limit_gb": plan.data_limit_gb,
            "data_refueling_gb": line.data_refueling_gb,
            "cycle_end_date": cycle_end,
        }

    def set_data_usage(self, customer_id: str, line_id: str, data_used_gb: float) -> str:
        """Sets a line's data usage (task set-up)."""
        self._target_line(customer_id, line_id).data_used_gb = data_used_gb
        return f"Data usage set to {data_used_gb} GB for line {line_id}"

    @tool(ToolKind.WRITE)
    def enable_roaming(self, customer_id: str, line_id: str) -> str:
        """Enables international roaming on a line.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to enable roaming for.
        """
        line = self._target_line(customer_id, line_id)
        if line.roaming_enabled:
            return "Roaming was already enabled"
        line.roaming_enabled = True
        return "Roaming enabled successfully"

    @tool(ToolKind.WRITE)
    def disable_roaming(self, customer_id: str, line_id: str) -> str:
        """Disables international roaming on a line.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to disable roaming for.
        """
        line = self._target_line(customer_id, line_id)
        if not line.roaming_enabled:
            return "Roaming was already disabled"
        line.roaming_enabled = False
        return "Roaming disabled successfully"

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the user's issue. Only transfer if - the user explicitly asks for a human agent - given the policy and the available tools, you cannot solve the user's issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"

    @tool(ToolKind.WRITE)
    def refuel_data(self, customer_id: str, line_id: str, gb_amount: float) -> dict[str, Any]:
        """Refuels data for a specific line, adding to the customer's bill. Checks: Line status must be Active, Customer owns the line. Logic: Adds data to the line and charges customer based on the plan's refueling rate.

        Args:
            customer_id: ID of the customer who owns the line.
            line_id: ID of the line to refuel data for.
            gb_amount: Amount of data to add in gigabytes.
        """
        line = self._target_line(customer_id, line_id)
        if gb_amount <= 0:
            raise ValueError("Refuel amount must be positive")
        plan = self._plan(line.plan_id)
        charge = gb_amount * plan.data_refueling_price_per_gb
        line.data_refueling_gb += gb_amount
        self._charge(
            customer_id,
            charge,
            f"Data refueling: {gb_amount} GB at ${plan.data_refueling_price_per_gb}/GB",
        )
        return {
            "message": f"Successfully added {gb_amount} GB of data for line {line_id} for "
            f"${charge:.2f}",
            "new_data_refueling_gb": line.data_refueling_gb,
            "charge": charge,
        }

    # ------------------------------------------------------------------ task set-up
    def suspend_line_for_overdue_bill(
        self, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool
    ) -> str:
        """Suspends a line for an unpaid bill (task set-up)."""
        line = self._line(line_id)
        if line.status != LineStatus.ACTIVE:
            raise ValueError("Line must be active to suspend for unpaid bill")
        amount = self._plan(line.plan_id).price_per_month
        if amount <= 0:
            raise ValueError("Amount must be positive for overdue bill")
        customer = self.get_customer_by_id(customer_id)
        if any(self._bill(b).status == BillStatus.OVERDUE for b in customer.bill_ids):
            raise ValueError("Customer already has an overdue bill")
        last_month_end = TODAY.replace(day=1) - datetime.timedelta(days=1)
        last_month_start = last_month_end.replace(day=1)
        bill = Bill(
            bill_id=new_bill_id,
            customer_id=customer_id,
            period_start=last_month_start,
            period_end=last_month_end,
            issue_date=last_month_start,
            total_due=0,
            due_date=last_month_start + datetime.timedelta(days=14),
            status=BillStatus.OVERDUE,
        )
        bill.line_items.append(
            LineItem(
                description=f"Charge for line {line.line_id}",
                amount=amount,
                date=TODAY,
                item_type="Charge" if amount > 0 else "Credit",
            )
        )
        bill.total_due += amount
        self.state.bills.append(bill)
        customer.bill_ids.append(new_bill_id)
        line.status = LineStatus.SUSPENDED
        line.suspension_start_date = TODAY
        if contract_ended:
            line.contract_end_date = last_month_end
        return (
            f"Line {line_id} suspended for unpaid bill {new_bill_id}. "
            f"Contract ended: {contract_ended}"
        )

    # ------------------------------------------------------------------ assertions
    def assert_data_refueling_amount(
        self, customer_id: str, line_id: str, expected_amount: float
    ) -> bool:
        """Whether the line's refuelled data is ``expected_amount`` GB."""
        line = self._target_line(customer_id, line_id)
        return abs(line.data_refueling_gb - expected_amount) < 1e-6

    def assert_line_status(self, customer_id: str, line_id: str, expected_status: str) -> bool:
        """Whether the line has the expected status."""
        return bool(self._target_line(customer_id, line_id).status == expected_status)

    def assert_overdue_bill_exists(self, customer_id: str, overdue_bill_id: str) -> bool:
        """Whether the customer's bill is overdue (raises, as tau2 does, when it is not)."""
        customer = self.get_customer_by_id(customer_id)
        if overdue_bill_id not in customer.bill_ids:
            raise ValueError(f"Overdue bill {overdue_bill_id} not found")
        if self._bill(overdue_bill_id).status != BillStatus.OVERDUE:
            raise ValueError(f"Overdue bill {overdue_bill_id} is not overdue")
        return True

    def assert_no_overdue_bill(self, overdue_bill_id: str) -> bool:
        """Whether the bill is gone or paid."""
        try:
            return self._bill(overdue_bill_id).status == BillStatus.PAID
        except ValueError:
            return True


def sync(world: Any) -> None:
    """tau2's ``TelecomEnvironment.sync_tools``, run after every tool call and set-up action: the
    phone learns from the carrier's records whether its line is active, roaming is allowed, the
    data allowance is used up, and whether a payment was requested; a payment made on the phone
    marks the bill paid."""
    from agentgym.envs.tooluse.phone_state import PaymentRequest

    surroundings = world.user_db.data.surroundings
    if surroundings.phone_number is None:
        return
    tools: TelecomTools = world.tools
    line = tools.line_by_phone(surroundings.phone_number)
    surroundings.line_active = line.status == LineStatus.ACTIVE
    surroundings.roaming_allowed = line.roaming_enabled
    plan = tools.plan_of(line)
    surroundings.mobile_data_usage_exceeded = (
        line.data_used_gb >= plan.data_limit_gb + line.data_refueling_gb
    )
    request = surroundings.payment_request
    if request is not None and request.paid:
        tools.set_bill_paid(request.bill_id)
        surroundings.payment_request = None
    if surroundings.payment_request is None:
        customer = tools.get_customer_by_phone(surroundings.phone_number)
        awaiting = tools.bills_awaiting_payment(customer)
        if awaiting:
            surroundings.payment_request = PaymentRequest(
                bill_id=awaiting[0].bill_id, amount_due=awaiting[0].total_due
            )


def policy(kind: str = "manual", solo: bool = False) -> str:
    """The agent's policy as tau2 composes it: the main policy and the tech-support policy, the
    ``manual`` (tau2's ``telecom``) or the ``workflow`` (``telecom-workflow``), in their solo
    versions for solo mode (tau2 has no solo manual: the manual serves both)."""
    from agentgym.envs.tooluse.data import read_text

    if kind not in ("manual", "workflow"):
        raise ValueError(f"unknown telecom policy {kind!r}; use 'manual' or 'workflow'")
    main = read_text(f"tau2/telecom/main_policy{'_solo' if solo else ''}.md")
    name = "tech_support_manual" if kind == "manual" else "tech_support_workflow"
    support = read_text(f"tau2/telecom/{name}{'_solo' if solo and kind == 'workflow' else ''}.md")
    return (
        f"<main_policy>\n{main}\n</main_policy>\n"
        f"<tech_support_policy>\n{support}\n</tech_support_policy>"
    )
