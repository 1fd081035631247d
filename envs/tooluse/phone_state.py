"""tau2-bench telecom, user side: the state of the simulated phone and of the user's surroundings.

The records of tau2's ``user_data_model.py`` (``MockPhoneAttributes``, ``UserSurroundings``,
``TelecomUserDB``) with the same fields and defaults, so the user database hashes as tau2's.
"""

from __future__ import annotations

from enum import Enum
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from agentgym.envs.tooluse.data import read_json
from agentgym.envs.tooluse.db import ModelDatabase


class Record(BaseModel):
    """tau2's ``BaseModelNoExtra``."""

    model_config = ConfigDict(extra="forbid")


class SimStatus(str, Enum):
    ACTIVE = "active"
    MISSING = "missing"
    LOCKED_PIN = "locked_pin"
    LOCKED_PUK = "locked_puk"


class NetworkTechnology(str, Enum):
    NONE = "none"
    TWO_G = "2G"
    THREE_G = "3G"
    FOUR_G = "4G"
    FIVE_G = "5G"


class NetworkModePreference(str, Enum):
    FOUR_G_5G_PREFERRED = "4g_5g_preferred"
    FOUR_G_ONLY = "4g_only"
    THREE_G_ONLY = "3g_only"
    TWO_G_ONLY = "2g_only"


class SignalStrength(str, Enum):
    NONE = "none"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class PerformanceLevel(str, Enum):
    UNKNOWN = "unknown"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class NetworkStatus(str, Enum):
    CONNECTED = "connected"
    SEARCHING = "searching"
    NO_SERVICE = "no_service"
    EMERGENCY_ONLY = "emergency_only"


class APNNames(str, Enum):
    INTERNET = "internet"
    BROKEN = "broken"


class APNSettings(Record):
    apn_name: APNNames = APNNames.INTERNET
    reset_at_reboot: bool = False
    mms_apn: str | None = "mms"
    mmsc_url: str | None = "http://mms.carrier.com/mms/wapenc"
    mms_proxy: str | None = None
    mms_port: int | None = None


class VpnDetails(Record):
    server_address: str | None = None
    protocol: str | None = None
    server_performance: PerformanceLevel = PerformanceLevel.UNKNOWN


class AppPermissions(Record):
    sms: bool = False
    storage: bool = False
    phone: bool = False
    network: bool = False


class AppStatus(Record):
    app_name: str
    permissions: AppPermissions = Field(default_factory=AppPermissions)


def _default_apps() -> dict[str, AppStatus]:
    return {
        "messaging": AppStatus(
            app_name="messaging",
            permissions=AppPermissions(sms=True, storage=True, phone=True),
        ),
        "browser": AppStatus(
            app_name="browser", permissions=AppPermissions(network=True, storage=True)
        ),
    }


class Phone(Record):
    """tau2's ``MockPhoneAttributes``."""

    sim_card_status: SimStatus = SimStatus.ACTIVE
    sim_card_missing: bool = False
    airplane_mode: bool = False
    network_signal_strength: SignalStrength = SignalStrength.GOOD
    network_technology_connected: NetworkTechnology = NetworkTechnology.FIVE_G
    network_connection_status: NetworkStatus = NetworkStatus.CONNECTED
    battery_level: int = 80
    data_enabled: bool = True
    roaming_enabled: bool = False
    network_mode_preference: NetworkModePreference = NetworkModePreference.FOUR_G_5G_PREFERRED
    active_apn_settings: APNSettings = Field(default_factory=APNSettings)
    wifi_enabled: bool = False
    wifi_connected: bool = False
    wifi_ssid: str | None = None
    wifi_signal_strength: SignalStrength = SignalStrength.NONE
    wifi_calling_enabled: bool = False
    wifi_calling_mms_over_wifi: bool = False
    data_saver_mode: bool = False
    vpn_enabled_setting: bool = False
    vpn_connected: bool = False
    vpn_details: VpnDetails | None = None
    app_statuses: dict[str, AppStatus] = Field(default_factory=_default_apps)


class PaymentRequest(Record):
    bill_id: str
    amount_due: float
    paid: bool = False


def _default_signal() -> dict[NetworkTechnology, SignalStrength]:
    return {
        NetworkTechnology.TWO_G: SignalStrength.POOR,
        NetworkTechnology.THREE_G: SignalStrength.FAIR,
        NetworkTechnology.FOUR_G: SignalStrength.GOOD,
        NetworkTechnology.FIVE_G: SignalStrength.EXCELLENT,
    }


class Surroundings(Record):
    """tau2's ``UserSurroundings``: where the user is, what the carrier allows."""

    name: str | None = None
    phone_number: str | None = None
    is_abroad: bool = False
    roaming_allowed: bool = False
    signal_strength: dict[NetworkTechnology, SignalStrength] = Field(
        default_factory=_default_signal
    )
    mobile_data_usage_exceeded: bool = False
    line_active: bool = True
    payment_request: PaymentRequest | None = None


class PhoneDB(Record):
    """tau2's ``TelecomUserDB``."""

    device: Phone = Field(default_factory=Phone)
    surroundings: Surroundings = Field(default_factory=Surroundings)


@cache
def base_user_db() -> PhoneDB:
    """The shipped user database (tau2's ``user_db.toml``, converted to JSON)."""
    return PhoneDB.model_validate(read_json("tau2/telecom/user_db.json"))


@cache
def _base_user_db_json() -> str:
    return base_user_db().model_dump_json()


def user_database() -> ModelDatabase:
    """A fresh episode user database over the shared base."""
    return ModelDatabase(base_user_db(), _base_user_db_json())
