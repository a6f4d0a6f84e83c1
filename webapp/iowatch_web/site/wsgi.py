"""The WSGI application gunicorn serves (iowatch_site.wsgi:application)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "iowatch_site.settings")

application = get_wsgi_application()
