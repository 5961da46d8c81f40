"""Rogue-agent monitor: uncertainty features, trained monitors, rollback interventions."""
