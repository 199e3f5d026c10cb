"""Running the companion as services: systemd user units (`units`) and the command that
writes them (`cli`)."""
