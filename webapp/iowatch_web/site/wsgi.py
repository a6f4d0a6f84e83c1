"""The WSGI application gunicorn serves (iowatch_web.site.wsgi:application)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "iowatch_web.site.settings")

application = get_wsgi_application()
