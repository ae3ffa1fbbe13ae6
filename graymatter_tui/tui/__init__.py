"""The Textual interface: the app, its screens and widgets. It never opens a backend or
builds an HTTP request itself."""
