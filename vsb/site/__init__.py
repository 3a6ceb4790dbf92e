"""The static leaderboard site of a frozen release (Jinja2 templates, local CSS/JS, SVG)."""
