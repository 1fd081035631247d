"""tau2-bench telecom, user side: the user's tools on the simulated phone (state in ``phone_state``).

Semantics follow ``tau2/domains/telecom`` (``user_data_model.py``, ``user_tools.py``): the same
device state, network search, speed test, status bar and tool texts, so an agent sees what it
would see in tau2. The ``break_*``/``turn_*``/``set_*`` functions without a tool mark are what
tasks use to set up a broken phone; ``assert_*`` are the env assertions that grade it.
"""

from __future__ import annotations

from typing import Any, Literal

from agentgym.envs.tooluse.phone_state import (
    APNNames,
    APNSettings,
    AppPermissions,
    NetworkModePreference,
    NetworkStatus,
    NetworkTechnology,
    PerformanceLevel,
    Phone,
    SignalStrength,
    SimStatus,
    Surroundings,
    VpnDetails,
)
from agentgym.envs.tooluse.toolkit import ToolKind, Toolkit, tool

_NO_NETWORK = (NetworkStatus.NO_SERVICE, NetworkTechnology.NONE, SignalStrength.NONE)
_SIGNAL_ICON = {
    SignalStrength.NONE: "📵 No Signal",
    SignalStrength.POOR: "📶¹ Poor",
    SignalStrength.FAIR: "📶² Fair",
    SignalStrength.GOOD: "📶³ Good",
    SignalStrength.EXCELLENT: "📶⁴ Excellent",
}
_SPEED_RANGE = {
    NetworkTechnology.TWO_G: (0.1, 0.4),
    NetworkTechnology.THREE_G: (1.0, 5.0),
    NetworkTechnology.FOUR_G: (10.0, 100.0),
    NetworkTechnology.FIVE_G: (50.0, 500.0),
    NetworkTechnology.NONE: (0.0, 0.0),
}
_SIGNAL_FACTOR = {
    SignalStrength.POOR: 0.2,
    SignalStrength.FAIR: 0.5,
    SignalStrength.GOOD: 0.8,
    SignalStrength.EXCELLENT: 1.0,
    SignalStrength.NONE: 0.0,
}
_SPEED_ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}
_PREFERRED_TECH = {
    NetworkModePreference.FOUR_G_ONLY: NetworkTechnology.FOUR_G,
    NetworkModePreference.THREE_G_ONLY: NetworkTechnology.THREE_G,
    NetworkModePreference.TWO_G_ONLY: NetworkTechnology.TWO_G,
}
DEFAULT_VPN = VpnDetails(
    server_address="192.168.1.1", protocol="OpenVPN", server_performance=PerformanceLevel.EXCELLENT
)


class PhoneTools(Toolkit):
    """The user's tools on their phone (tau2's ``TelecomUserTools``)."""

    def __init__(self, db: Any) -> None:
        super().__init__(db)
        self.vpn_profile = DEFAULT_VPN.model_copy()
        """The VPN the phone connects to. In tau2 the connection *is* this profile (one shared
        object), so ``break_vpn`` degrades every later reconnect too; kept per phone here."""

    @property
    def device(self) -> Phone:
        """The phone's state (the episode's own copy)."""
        return self.db.data.device  # type: ignore[attr-defined,no-any-return]

    @property
    def surroundings(self) -> Surroundings:
        """The user's surroundings (the episode's own copy)."""
        return self.db.data.surroundings  # type: ignore[attr-defined,no-any-return]

    def status_bar(self) -> str:
        """The status bar's indicators, as tau2 renders them."""
        d = self.device
        icons = []
        if d.airplane_mode:
            icons.append("✈️ Airplane Mode")
        else:
            icons.append(_SIGNAL_ICON.get(d.network_signal_strength, "📵 No Signal"))
            if d.network_technology_connected != NetworkTechnology.NONE:
                icons.append(d.network_technology_connected.value)
            if d.data_enabled and d.network_technology_connected != NetworkTechnology.NONE:
                icons.append("📱 Data Enabled")
                if d.data_saver_mode:
                    icons.append("🔽 Data Saver")
            else:
                icons.append("📵 Data Disabled")
        if d.wifi_enabled and d.wifi_connected:
            icons.append(f"📡 Connected to {d.wifi_ssid}" if d.wifi_ssid else "📡 Enabled")
        if d.vpn_connected:
            icons.append("🔒 VPN Connected")
        icons.append(f"🔋 {d.battery_level}%")
        return " | ".join(icons)

    def _with_bar(self, text: str) -> str:
        return f"{text}\nStatus Bar: {self.status_bar()}"

    # ------------------------------------------------------------------ set-up
    def set_user_info(self, name: str, phone_number: str) -> None:
        """Sets the user's name and phone number (task set-up)."""
        self.surroundings.name = name
        self.surroundings.phone_number = phone_number

    def set_user_location(self, abroad: bool) -> None:
        """Puts the user abroad or at home (task set-up)."""
        self.surroundings.is_abroad = abroad

    # ------------------------------------------------------------------ status and network
    @tool(ToolKind.READ)
    def check_status_bar(self) -> str:
        """Shows what icons are currently visible in your phone's status bar (the area at the top of the screen). Displays network signal strength, mobile data status (enabled, disabled, data saver), Wi-Fi status, and battery level."""
        return f"Status Bar: {self.status_bar()}"

    @tool(ToolKind.READ)
    def check_network_status(self) -> str:
        """Checks your phone's connection status to cellular networks and Wi-Fi. Shows airplane mode status, signal strength, network type, whether mobile data is enabled, and whether data roaming is enabled."""
        d = self.device
        lines = [
            f"Airplane Mode: {'ON' if d.airplane_mode else 'OFF'}",
            f"SIM Card Status: {self.sim_status().value}",
            f"Cellular Connection: {d.network_connection_status.value}",
            f"Cellular Signal: {d.network_signal_strength.value}",
            f"Cellular Network Type: {d.network_technology_connected.value}",
            f"Mobile Data Enabled: {'Yes' if d.data_enabled else 'No'}",
            f"Data Roaming Enabled: {'Yes' if d.roaming_enabled else 'No'}",
            f"Wi-Fi Radio: {'ON' if d.wifi_enabled else 'OFF'}",
            f"Wi-Fi Connected: {'Yes' if d.wifi_connected else 'No'}",
        ]
        if d.wifi_connected:
            lines.append(f"Connected Wi-Fi Network: {d.wifi_ssid}")
        return "\n".join(lines)

    @tool(ToolKind.READ)
    def check_network_mode_preference(self) -> str:
        """Shows the current network mode preference."""
        return f"Network Mode Preference: {self.device.network_mode_preference.value}"

    @tool(ToolKind.WRITE)
    def set_network_mode_preference(self, mode: NetworkModePreference | str) -> str:
        """Changes the type of cellular network your phone prefers to connect to (e.g., 5G, LTE/4G, 3G). Higher-speed networks (LTE/5G) provide faster data but may use more battery."""
        try:
            valid = NetworkModePreference(mode)
        except ValueError:
            options = ", ".join(m.value for m in NetworkModePreference)
            return self._with_bar(
                f"Failed to set network mode: '{mode}' is not a valid option. "
                f"Please use one of: {options}"
            )
        self.device.network_mode_preference = valid
        self.simulate_network_search()
        return self._with_bar(f"Preferred Network Mode set to: {valid.value}")

    def mobile_data_working(self) -> bool:
        """Whether mobile data works: radios on, signal, service, roaming, data on, allowance."""
        d, s = self.device, self.surroundings
        if d.airplane_mode or d.network_signal_strength == SignalStrength.NONE:
            return False
        if d.network_connection_status == NetworkStatus.NO_SERVICE:
            return False
        if s.is_abroad and (not d.roaming_enabled or not s.roaming_allowed):
            return False
        return d.data_enabled and not s.mobile_data_usage_exceeded

    def speed(self) -> tuple[float | None, str | None]:
        """(Mbps, description) of a speed test, as tau2 simulates it."""
        if not self.mobile_data_working():
            return None, "No Connection"
        d = self.device
        factor = 1.0
        if (
            d.vpn_connected
            and d.vpn_details
            and (d.vpn_details.server_performance == PerformanceLevel.POOR)
        ):
            factor = 0.1
        if d.data_saver_mode:
            factor *= 0.2
        low, high = _SPEED_RANGE.get(d.network_technology_connected, (0.0, 0.0))
        mbps = round(
            (low + high) / 2.0 * _SIGNAL_FACTOR.get(d.network_signal_strength, 0.0) * factor, 2
        )
        for limit, desc in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")):
            if mbps < limit:
                return mbps, desc
        return mbps, "Excellent"

    @tool(ToolKind.READ)
    def run_speed_test(self) -> str:
        """Measures your current internet connection speed (download speed). Provides information about connection quality and what activities it can support."""
        mbps, desc = self.speed()
        if mbps is None:
            return f"Speed test failed: {desc or 'Could not determine speed'}."
        return f"Speed Test Result: {mbps:.2f} Mbps ({desc}). {_SPEED_ADVICE.get(desc or '', '')}"

    # ------------------------------------------------------------------ airplane mode
    @tool(ToolKind.WRITE)
    def toggle_airplane_mode(self) -> str:
        """Toggles Airplane Mode ON or OFF. When ON, it disconnects all wireless communications including cellular, Wi-Fi, and Bluetooth. Returns the new state of airplane_mode."""
        on = self._toggle_airplane_mode()
        return self._with_bar(f"Airplane Mode is now {'ON' if on else 'OFF'}.")

    def _toggle_airplane_mode(self) -> bool:
        d = self.device
        was_on = d.airplane_mode
        d.airplane_mode = not was_on
        if was_on:
            d.network_connection_status = NetworkStatus.SEARCHING
            if d.wifi_enabled:
                self._drop_wifi()
        else:
            self._drop_wifi()
            if d.vpn_connected:
                self._disconnect_vpn()
        self.simulate_network_search()
        return d.airplane_mode

    def _drop_wifi(self) -> None:
        d = self.device
        d.wifi_connected, d.wifi_ssid, d.wifi_signal_strength = False, None, SignalStrength.NONE

    def turn_airplane_mode_on(self) -> str:
        """Turns Airplane Mode ON (task set-up)."""
        if not self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        """Turns Airplane Mode OFF (task set-up)."""
        if self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now OFF."

    # ------------------------------------------------------------------ SIM
    def sim_status(self) -> SimStatus:
        """The SIM's status (missing wins)."""
        return SimStatus.MISSING if self.device.sim_card_missing else self.device.sim_card_status

    @tool(ToolKind.READ)
    def check_sim_status(self) -> str:
        """Checks if your SIM card is working correctly and displays its current status. Shows if the SIM is active, missing, or locked with a PIN or PUK code."""
        return {
            SimStatus.ACTIVE: "Your SIM card is active and working.",
            SimStatus.MISSING: "No SIM card detected in the phone.",
            SimStatus.LOCKED_PIN: "The SIM card is locked with a PIN code.",
            SimStatus.LOCKED_PUK: "The SIM card is locked with a PUK code.",
        }[self.sim_status()]

    @tool(ToolKind.WRITE)
    def reseat_sim_card(self) -> str:
        """Simulates removing and reinserting your SIM card. This can help resolve recognition issues."""
        self.device.sim_card_missing = False
        self.simulate_network_search()
        return self._with_bar("SIM card re-seated successfully.")

    def unseat_sim_card(self) -> str:
        """Removes the SIM card (task set-up; ``reseat_sim_card`` fixes it)."""
        self.device.sim_card_missing = True
        self.simulate_network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: Literal["pin", "puk"]) -> str:
        """Locks the SIM card (task set-up; no tool fixes it)."""
        self.device.sim_card_status = (
            SimStatus.LOCKED_PIN if mode == "pin" else SimStatus.LOCKED_PUK
        )
        self.simulate_network_search()
        return f"SIM card locked successfully in {mode} mode."

    # ------------------------------------------------------------------ mobile data and roaming
    @tool(ToolKind.WRITE)
    def toggle_data(self) -> str:
        """Toggles your phone's mobile data connection ON or OFF. Controls whether your phone can use cellular data for internet access when Wi-Fi is unavailable. Returns the new data connection status."""
        on = self._toggle("data_enabled", search=True)
        return self._with_bar(f"Mobile Data is now {'ON' if on else 'OFF'}.")

    def _toggle(self, field: str, search: bool) -> bool:
        value = not getattr(self.device, field)
        setattr(self.device, field, value)
        if search:
            self.simulate_network_search()
        return value

    def turn_data_on(self) -> str:
        """Turns mobile data ON (task set-up)."""
        self.device.data_enabled = True
        return "Data connection restored."

    def turn_data_off(self) -> str:
        """Turns mobile data OFF (task set-up)."""
        if self._toggle("data_enabled", search=True):
            self._toggle("data_enabled", search=True)
        return "Data connection broken."

    @tool(ToolKind.WRITE)
    def toggle_roaming(self) -> str:
        """Toggles Data Roaming ON or OFF. When ON, your phone can use data networks in areas outside your carrier's coverage. Returns the new data roaming status."""
        on = self._toggle("roaming_enabled", search=True)
        return self._with_bar(f"Data Roaming is now {'ON' if on else 'OFF'}.")

    def turn_roaming_on(self) -> str:
        """Turns data roaming ON (task set-up)."""
        if not self._toggle("roaming_enabled", search=True):
            self._toggle("roaming_enabled", search=True)
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        """Turns data roaming OFF (task set-up)."""
        if self._toggle("roaming_enabled", search=True):
            self._toggle("roaming_enabled", search=True)
        return "Data Roaming is now OFF."

    @tool(ToolKind.READ)
    def check_data_restriction_status(self) -> str:
        """Checks if your phone has any data-limiting features active. Shows if Data Saver mode is on."""
        if self.device.data_saver_mode:
            return "Data Saver mode is ON (limits data usage)."
        return "Data Saver mode is OFF."

    @tool(ToolKind.WRITE)
    def toggle_data_saver_mode(self) -> str:
        """Toggles Data Saver mode ON or OFF. When ON, it reduces data usage, which may affect data speed. Returns the new data saver mode status."""
        on = self._toggle("data_saver_mode", search=False)
        return self._with_bar(f"Data Saver Mode is now {'ON' if on else 'OFF'}.")

    def turn_data_saver_mode_on(self) -> str:
        """Turns Data Saver ON (task set-up)."""
        if not self._toggle("data_saver_mode", search=False):
            self._toggle("data_saver_mode", search=False)
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        """Turns Data Saver OFF (task set-up)."""
        if self._toggle("data_saver_mode", search=False):
            self._toggle("data_saver_mode", search=False)
        return "Data Saver Mode is now OFF."

    # ------------------------------------------------------------------ APN
    @tool(ToolKind.READ)
    def check_apn_settings(self) -> str:
        """Checks the technical APN settings your phone uses to connect to your carrier's mobile data network. Shows current APN name and MMSC URL for picture messaging."""
        apn = self.device.active_apn_settings
        return (
            f"Current APN Name: {apn.apn_name.value or 'Not Set'}\n"
            f"MMSC URL (for picture messages): {apn.mmsc_url or 'Not Set'}\n"
            "(These are technical settings, usually best left unchanged.)"
        )

    @tool(ToolKind.WRITE)
    def set_apn_settings(self, apn_settings: APNSettings | dict[str, Any]) -> str:
        """Sets the APN settings for the phone."""
        settings = APNSettings(**apn_settings) if isinstance(apn_settings, dict) else apn_settings
        self.device.active_apn_settings = settings
        self.simulate_network_search()
        return self._with_bar(f"APN settings set to: {settings.apn_name.value}")

    @tool(ToolKind.WRITE)
    def reset_apn_settings(self) -> str:
        """Resets your APN settings to the default settings."""
        self.device.active_apn_settings.reset_at_reboot = True
        self.simulate_network_search()
        return self._with_bar("APN settings will reset at reboot.")

    def break_apn_settings(self) -> str:
        """Breaks the APN (task set-up; ``reset_apn_settings`` and a reboot fix it)."""
        self.device.active_apn_settings.apn_name = APNNames.BROKEN
        self.simulate_network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        """Clears the MMSC URL (task set-up; ``reset_apn_settings`` and a reboot fix it)."""
        self.device.active_apn_settings.mmsc_url = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    # ------------------------------------------------------------------ Wi-Fi
    @tool(ToolKind.READ)
    def check_wifi_status(self) -> str:
        """Checks your Wi-Fi connection status. Shows if Wi-Fi is turned on, which network you're connected to (if any), and the signal strength."""
        d = self.device
        if not d.wifi_enabled:
            return "Wi-Fi is turned OFF."
        if d.wifi_connected:
            return (
                f"Wi-Fi is ON and connected to '{d.wifi_ssid}'. "
                f"Signal strength: {d.wifi_signal_strength.value}."
            )
        return "Wi-Fi is ON but not connected to any network."

    @tool(ToolKind.WRITE)
    def toggle_wifi(self) -> str:
        """Toggles your phone's Wi-Fi radio ON or OFF. Controls whether your phone can discover and connect to wireless networks for internet access. Returns the new Wi-Fi status."""
        if self.device.airplane_mode:
            return self._with_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        on = self._toggle("wifi_enabled", search=False)
        if not on:
            self._drop_wifi()
        return self._with_bar(f"Wi-Fi is now {'ON' if on else 'OFF'}.")

    @tool(ToolKind.READ)
    def check_wifi_calling_status(self) -> str:
        """Checks if Wi-Fi Calling is enabled on your device. This feature allows you to make and receive calls over a Wi-Fi network instead of using the cellular network."""
        return f"Wi-Fi Calling is currently turned {'ON' if self.device.wifi_calling_enabled else 'OFF'}."

    @tool(ToolKind.WRITE)
    def toggle_wifi_calling(self) -> str:
        """Toggles Wi-Fi Calling ON or OFF. This feature allows you to make and receive calls over Wi-Fi instead of the cellular network, which can help in areas with weak cellular signal. Returns the new Wi-Fi Calling status."""
        on = self._toggle("wifi_calling_enabled", search=False)
        return self._with_bar(f"Wi-Fi Calling is now {'ON' if on else 'OFF'}.")

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        """Sets Wi-Fi Calling and, if given, MMS over Wi-Fi (task set-up)."""
        self.device.wifi_calling_enabled = enabled
        text = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            self.device.wifi_calling_mms_over_wifi = mms_over_wifi
            text += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return text

    # ------------------------------------------------------------------ VPN
    @tool(ToolKind.READ)
    def check_vpn_status(self) -> str:
        """Checks if you're using a VPN (Virtual Private Network) connection. Shows if a VPN is active, connected, and displays any available connection details."""
        d = self.device
        if d.vpn_connected:
            if d.vpn_details:
                return f"VPN is ON and connected. Details: {d.vpn_details.model_dump()}"
            return "VPN is ON and connected (no specific details available)."
        if d.vpn_enabled_setting:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    @tool(ToolKind.WRITE)
    def connect_vpn(self) -> str:
        """Connects to your VPN (Virtual Private Network)."""
        if self.device.vpn_connected:
            return "VPN already connected."
        self.device.vpn_connected = True
        self.device.vpn_details = self.vpn_profile.model_copy()
        return self._with_bar("VPN connected successfully.")

    @tool(ToolKind.WRITE)
    def disconnect_vpn(self) -> str:
        """Disconnects any active VPN (Virtual Private Network) connection. Stops routing your internet traffic through a VPN server, which might affect connection speed or access to content."""
        done = self._disconnect_vpn()
        text = (
            "VPN disconnected successfully." if done else "No active VPN connection to disconnect."
        )
        return self._with_bar(text)

    def _disconnect_vpn(self) -> bool:
        if not self.device.vpn_connected:
            return False
        self.device.vpn_connected, self.device.vpn_details = False, None
        return True

    def break_vpn(self) -> str:
        """Connects a VPN with poor performance (task set-up: slow data)."""
        self.connect_vpn()
        assert self.device.vpn_details is not None
        self.device.vpn_details.server_performance = PerformanceLevel.POOR
        self.vpn_profile.server_performance = PerformanceLevel.POOR
        return "VPN connection broken."

    # ------------------------------------------------------------------ apps
    @tool(ToolKind.READ)
    def check_installed_apps(self) -> str:
        """Returns the name of all installed apps on the phone."""
        return (
            f"The following apps are installed on the phone: {', '.join(self.device.app_statuses)}"
        )

    def _granted(self, permissions: AppPermissions) -> list[str]:
        return [n.replace("_", " ").lower() for n, on in permissions.model_dump().items() if on]

    @tool(ToolKind.READ)
    def check_app_status(self, app_name: str) -> str:
        """Checks detailed information about a specific app. Shows its permissions and background data usage settings."""
        app = self.device.app_statuses.get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = self._granted(app.permissions)
        if not granted:
            return f"Status for App: {app_name}\n - Permissions: None granted."
        return "\n".join(
            [f"Status for App: {app_name}", " - Permissions Granted:"]
            + [f"   - {p}" for p in granted]
        )

    @tool(ToolKind.READ)
    def check_app_permissions(self, app_name: str) -> str:
        """Checks what permissions a specific app currently has. Shows if the app has access to features like storage, camera, location, etc."""
        app = self.device.app_statuses.get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = self._granted(app.permissions)
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    @tool(ToolKind.WRITE)
    def grant_app_permission(self, app_name: str, permission: str) -> str:
        """Gives a specific permission to an app (like access to storage, camera, or location). Required for some app functions to work properly.

        Args:
            app_name: The name of the app to grant the permission to.
            permission: The permission to grant, should be lowercase.
        """
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if app is None:
            ok, text = False, f"App '{app_name}' not found. Cannot grant permission."
        elif permission not in AppPermissions.model_fields:
            available = list(AppPermissions.model_fields)
            ok, text = (
                False,
                (
                    f"Permission '{permission}' not tracked for app '{app_name}', "
                    f"available permissions: {available}"
                ),
            )
        else:
            setattr(app.permissions, permission, True)
            ok, text = True, f"Permission '{permission}' granted to app '{app_name}'."
        return self._with_bar(f"{'Success. ' if ok else 'Error. '}{text}")

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        """Removes a permission from an app (task set-up)."""
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if app is None:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if permission not in AppPermissions.model_fields:
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        setattr(app.permissions, permission, False)
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # ------------------------------------------------------------------ MMS
    def mms_works(self) -> bool:
        """Whether the messaging app can send MMS (data path, 3G+, no MMS over Wi-Fi, MMSC, perms)."""
        d = self.device
        if not self.mobile_data_working():
            return False
        if d.network_technology_connected == NetworkTechnology.TWO_G:
            return False
        if d.wifi_calling_enabled and d.wifi_calling_mms_over_wifi:
            return False
        if d.active_apn_settings.mmsc_url is None:
            return False
        app = d.app_statuses.get("messaging")
        return app is not None and app.permissions.storage and app.permissions.sms

    @tool(ToolKind.READ)
    def can_send_mms(self) -> str:
        """Checks if the default messaging app can send MMS messages."""
        if self.mms_works():
            return "Your messaging app can send MMS messages."
        return "Your messaging app cannot send MMS messages."

    # ------------------------------------------------------------------ device
    @tool(ToolKind.WRITE)
    def reboot_device(self) -> str:
        """Restarts your phone completely. This can help resolve many temporary software glitches by refreshing all running services and connections."""
        lines = []
        if self.device.active_apn_settings.reset_at_reboot:
            lines.append("Resetting APN settings...")
            self.device.active_apn_settings = APNSettings()
        lines.append("Restarting network services...")
        self.device.network_connection_status = NetworkStatus.SEARCHING
        self.simulate_network_search()
        return self._with_bar("\n".join(lines))

    def simulate_network_search(self) -> None:
        """Re-evaluates the cellular connection from the SIM, mode preference and surroundings."""
        d, signal = self.device, self.surroundings.signal_strength
        if self.sim_status() == SimStatus.ACTIVE:
            d.network_connection_status = NetworkStatus.CONNECTED
            pref = d.network_mode_preference
            five_g = signal.get(NetworkTechnology.FIVE_G, SignalStrength.NONE)
            if pref == NetworkModePreference.FOUR_G_5G_PREFERRED and five_g != SignalStrength.NONE:
                tech = NetworkTechnology.FIVE_G
            else:
                tech = _PREFERRED_TECH.get(pref, NetworkTechnology.FOUR_G)
            d.network_technology_connected = tech
            d.network_signal_strength = signal.get(tech, SignalStrength.NONE)
        else:
            self._no_network()
        if (
            d.airplane_mode
            or d.active_apn_settings.apn_name == APNNames.BROKEN
            or not self.surroundings.line_active
        ):
            self._no_network()

    def _no_network(self) -> None:
        d = self.device
        status, tech, signal = _NO_NETWORK
        d.network_connection_status, d.network_technology_connected = status, tech
        d.network_signal_strength = signal

    # ------------------------------------------------------------------ payments
    @tool(ToolKind.READ)
    def check_payment_request(self) -> str:
        """Checks if the agent has sent you a payment request."""
        request = self.surroundings.payment_request
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request.bill_id} of {request.amount_due} USD."

    @tool(ToolKind.WRITE)
    def make_payment(self) -> str:
        """Makes a payment for the bill that the agent has sent you."""
        request = self.surroundings.payment_request
        if request is None:
            return "You do not have a payment request."
        request.paid = True
        return f"Payment of {request.amount_due} USD has been made for bill {request.bill_id}."

    # ------------------------------------------------------------------ assertions
    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        """Whether airplane mode is as expected."""
        return self.device.airplane_mode == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        """Whether the cellular connection status is as expected."""
        return self.device.network_connection_status == NetworkStatus(expected_status)

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        """Whether mobile data works as expected."""
        return self.mobile_data_working() == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        """Whether data roaming is as expected."""
        return self.device.roaming_enabled == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        """Whether Data Saver is as expected."""
        return self.device.data_saver_mode == expected_status

    def assert_internet_speed(
        self, expected_speed: float, expected_desc: str | None = None
    ) -> bool:
        """Whether the speed test reaches ``expected_speed`` (and the description, if given)."""
        mbps, desc = self.speed()
        fast = (mbps or 0.0) >= expected_speed
        return (
            fast
            if expected_desc is None
            else fast and (desc or "").lower() == expected_desc.lower()
        )

    def assert_internet_not_excellent(self) -> bool:
        """Whether the speed test is below Excellent."""
        return (self.speed()[1] or "").lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        """Whether MMS works as expected."""
        return self.mms_works() == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        """Whether the data allowance is used up, as expected."""
        return self.surroundings.mobile_data_usage_exceeded == expected_status
