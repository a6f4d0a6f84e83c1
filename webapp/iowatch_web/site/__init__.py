"""The iowatch Django project: settings, URLs and the WSGI entry point."""
