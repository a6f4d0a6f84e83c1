from django.apps import AppConfig


class RetentionConfig(AppConfig):
    name = "iowatch_web.retention"
    label = "retention"
    verbose_name = "Retention"
    default_auto_field = "django.db.models.BigAutoField"
