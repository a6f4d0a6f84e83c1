from django.apps import AppConfig


class HostsConfig(AppConfig):
    name = "iowatch_web.hosts"
    label = "hosts"
    verbose_name = "Hosts"
    default_auto_field = "django.db.models.BigAutoField"
