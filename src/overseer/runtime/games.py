"""What a game needs from the runtime: a session whose turns run on the bus, and the
channel's message record (the games in `overseer.envs` are built on these)."""

from overseer.runtime._channel import ChannelMessage
from overseer.runtime._game import GameSession, Played, SessionOptions, Turn

__all__ = ["ChannelMessage", "GameSession", "Played", "SessionOptions", "Turn"]
