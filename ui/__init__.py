"""What the dashboard's pages share: session state, the cached simulate wrapper, widgets, charts."""
