# ruff: noqa: E501  (template sentences, one per line, are easier to read and translate unwrapped)
"""Per-domain, per-language content of the generated worlds (issue 40).

Written for the generator only; nothing here is shared with `bench/dream_eval`. Each domain in
each language has three topic notes, one project, four lessons, a paraphrase of one of them
and a newer value for one of the person's own lines. A `{...}` span marks the lesson's token:
the exact text (a value, a flag, a name) the scorer counts to find the lesson wherever it
landed; the braces are removed before anything is written.

Note: (title, alias, line_a with a `{value}`, line_b). Lesson: (note index, text).
"""

from __future__ import annotations

from typing import TypedDict


class Domain(TypedDict):
    notes: list[tuple[str, str, str, str]]
    project: str
    lessons: list[tuple[int, str]]
    paraphrase: tuple[int, str]  # (lesson index, the same lesson in other words)
    stale: str  # line_a of note 0 with another value


DOMAINS: dict[str, dict[str, Domain]] = {
    "homelab": {
        "en": {
            "notes": [
                (
                    "Proxmox",
                    "PVE",
                    "A full backup of the Proxmox host takes {70 minutes} since the SSD swap.",
                    "The host runs three VMs and two containers.",
                ),
                (
                    "ZFS",
                    "zpool",
                    "The pool scrub runs on the {first Sunday} of the month.",
                    "The pool is a mirror of two 4 TB disks.",
                ),
                (
                    "Reverse proxy",
                    "Caddy",
                    "Caddy serves every internal site on {*.lab.home}.",
                    "Certificates come from the internal CA.",
                ),
            ],
            "project": "Rack rebuild",
            "lessons": [
                (0, "Proxmox needs {qm unlock} on the VM when a backup job dies halfway."),
                (1, "A ZFS scrub slows the NAS down to {40 MB/s} while it runs."),
                (2, "Caddy only renews a certificate when port {8080} is free for its challenge."),
                (1, "A zpool on 4K disks must be created with {ashift=12} or it stays slow."),
            ],
            "paraphrase": (1, "While ZFS is scrubbing, the NAS cannot go faster than {40 MB/s}."),
            "stale": "A full backup of the Proxmox host takes {45 minutes} since the SSD swap.",
        },
        "es": {
            "notes": [
                (
                    "Proxmox",
                    "PVE",
                    "Una copia completa del host Proxmox tarda {70 minutos} desde el cambio de SSD.",
                    "El host ejecuta tres máquinas virtuales y dos contenedores.",
                ),
                (
                    "ZFS",
                    "zpool",
                    "El scrub del pool se hace el {primer domingo} de cada mes.",
                    "El pool es un espejo de dos discos de 4 TB.",
                ),
                (
                    "Proxy inverso",
                    "Caddy",
                    "Caddy sirve todos los sitios internos en {*.lab.casa}.",
                    "Los certificados salen de la CA interna.",
                ),
            ],
            "project": "Reforma del rack",
            "lessons": [
                (
                    0,
                    "Proxmox necesita {qm unlock} en la máquina cuando una copia se corta a medias.",
                ),
                (1, "Un scrub de ZFS deja el NAS en {40 MB/s} mientras dura."),
                (
                    2,
                    "Caddy solo renueva un certificado si el puerto {8080} está libre para el reto.",
                ),
                (1, "Un zpool en discos de 4K se crea con {ashift=12} o se queda lento."),
            ],
            "paraphrase": (1, "Mientras ZFS hace el scrub, el NAS no pasa de {40 MB/s}."),
            "stale": "Una copia completa del host Proxmox tarda {45 minutos} desde el cambio de SSD.",
        },
        "fr": {
            "notes": [
                (
                    "Proxmox",
                    "PVE",
                    "Une sauvegarde complète de l'hôte Proxmox prend {70 minutes} depuis le changement de SSD.",
                    "L'hôte fait tourner trois VM et deux conteneurs.",
                ),
                (
                    "ZFS",
                    "zpool",
                    "Le scrub du pool a lieu le {premier dimanche} du mois.",
                    "Le pool est un miroir de deux disques de 4 To.",
                ),
                (
                    "Proxy inverse",
                    "Caddy",
                    "Caddy sert tous les sites internes sur {*.lab.maison}.",
                    "Les certificats viennent de l'AC interne.",
                ),
            ],
            "project": "Refonte de la baie",
            "lessons": [
                (
                    0,
                    "Proxmox demande {qm unlock} sur la VM quand une sauvegarde s'arrête à mi-chemin.",
                ),
                (1, "Un scrub ZFS ralentit le NAS à {40 Mo/s} tant qu'il tourne."),
                (
                    2,
                    "Caddy ne renouvelle un certificat que si le port {8080} est libre pour le défi.",
                ),
                (1, "Un zpool sur disques 4K doit être créé avec {ashift=12} sinon il reste lent."),
            ],
            "paraphrase": (1, "Pendant le scrub ZFS, le NAS ne dépasse pas {40 Mo/s}."),
            "stale": "Une sauvegarde complète de l'hôte Proxmox prend {45 minutes} depuis le changement de SSD.",
        },
        "de": {
            "notes": [
                (
                    "Proxmox",
                    "PVE",
                    "Ein volles Backup des Proxmox-Hosts dauert seit dem SSD-Tausch {70 Minuten}.",
                    "Der Host betreibt drei VMs und zwei Container.",
                ),
                (
                    "ZFS",
                    "zpool",
                    "Der Scrub des Pools läuft am {ersten Sonntag} im Monat.",
                    "Der Pool ist ein Spiegel aus zwei 4-TB-Platten.",
                ),
                (
                    "Reverse Proxy",
                    "Caddy",
                    "Caddy liefert alle internen Seiten unter {*.lab.heim} aus.",
                    "Die Zertifikate kommen von der internen CA.",
                ),
            ],
            "project": "Rack-Umbau",
            "lessons": [
                (0, "Proxmox braucht {qm unlock} für die VM, wenn ein Backup mittendrin abbricht."),
                (1, "Ein ZFS-Scrub bremst das NAS auf {40 MB/s}, solange er läuft."),
                (
                    2,
                    "Caddy erneuert ein Zertifikat nur, wenn Port {8080} für die Challenge frei ist.",
                ),
                (
                    1,
                    "Ein zpool auf 4K-Platten muss mit {ashift=12} angelegt werden, sonst bleibt er langsam.",
                ),
            ],
            "paraphrase": (1, "Während ZFS scrubbt, schafft das NAS höchstens {40 MB/s}."),
            "stale": "Ein volles Backup des Proxmox-Hosts dauert seit dem SSD-Tausch {45 Minuten}.",
        },
    },
    "research": {
        "en": {
            "notes": [
                (
                    "Zotero",
                    "reference manager",
                    "The Zotero library syncs to the lab group every {15 minutes}.",
                    "Every paper gets a tag for its chapter.",
                ),
                (
                    "Mass spectrometer",
                    "MS",
                    "The mass spectrometer needs {30 minutes} of warm-up before a run.",
                    "Calibration uses the vendor's standard mix.",
                ),
                (
                    "Statistics",
                    "stats",
                    "The lab reports effect sizes with {95 %} confidence intervals.",
                    "Analyses are preregistered on OSF.",
                ),
            ],
            "project": "Thesis chapter 3",
            "lessons": [
                (
                    0,
                    "Zotero loses PDF links when the data folder moves unless {Better BibTeX} keeps the keys.",
                ),
                (1, "The mass spectrometer drifts by {0.4 ppm} when the room passes 24 degrees."),
                (2, "Mixed models in lme4 need {REML=FALSE} to compare fixed effects."),
                (1, "The mass spectrometer source must be cleaned after {200 injections}."),
            ],
            "paraphrase": (
                2,
                "To compare fixed effects between lme4 mixed models, fit them with {REML=FALSE}.",
            ),
            "stale": "The mass spectrometer needs {45 minutes} of warm-up before a run.",
        },
        "es": {
            "notes": [
                (
                    "Zotero",
                    "gestor de referencias",
                    "La biblioteca de Zotero se sincroniza con el grupo cada {15 minutos}.",
                    "Cada artículo lleva una etiqueta con su capítulo.",
                ),
                (
                    "Espectrómetro de masas",
                    "espectrómetro",
                    "El espectrómetro de masas necesita {30 minutos} de calentamiento antes de medir.",
                    "La calibración usa la mezcla estándar del fabricante.",
                ),
                (
                    "Estadística",
                    "estadística",
                    "El grupo publica tamaños de efecto con intervalos al {95 %}.",
                    "Los análisis se prerregistran en OSF.",
                ),
            ],
            "project": "Capítulo 3 de la tesis",
            "lessons": [
                (
                    0,
                    "Zotero pierde los enlaces a los PDF si se mueve la carpeta, salvo que {Better BibTeX} guarde las claves.",
                ),
                (1, "El espectrómetro de masas deriva {0,4 ppm} cuando la sala pasa de 24 grados."),
                (
                    2,
                    "Los modelos mixtos de lme4 necesitan {REML=FALSE} para comparar efectos fijos.",
                ),
                (1, "La fuente del espectrómetro se limpia cada {200 inyecciones}."),
            ],
            "paraphrase": (
                2,
                "Para comparar efectos fijos entre modelos mixtos de lme4 hay que ajustarlos con {REML=FALSE}.",
            ),
            "stale": "El espectrómetro de masas necesita {45 minutos} de calentamiento antes de medir.",
        },
        "fr": {
            "notes": [
                (
                    "Zotero",
                    "gestionnaire de références",
                    "La bibliothèque Zotero se synchronise avec le groupe toutes les {15 minutes}.",
                    "Chaque article porte une étiquette de chapitre.",
                ),
                (
                    "Spectromètre de masse",
                    "spectromètre",
                    "Le spectromètre de masse demande {30 minutes} de chauffe avant une mesure.",
                    "L'étalonnage utilise le mélange standard du fabricant.",
                ),
                (
                    "Statistiques",
                    "stats",
                    "Le labo publie les tailles d'effet avec des intervalles à {95 %}.",
                    "Les analyses sont préenregistrées sur OSF.",
                ),
            ],
            "project": "Chapitre 3 de la thèse",
            "lessons": [
                (
                    0,
                    "Zotero perd les liens vers les PDF quand le dossier bouge, sauf si {Better BibTeX} garde les clés.",
                ),
                (
                    1,
                    "Le spectromètre de masse dérive de {0,4 ppm} quand la salle dépasse 24 degrés.",
                ),
                (
                    2,
                    "Les modèles mixtes de lme4 demandent {REML=FALSE} pour comparer les effets fixes.",
                ),
                (1, "La source du spectromètre se nettoie toutes les {200 injections}."),
            ],
            "paraphrase": (
                2,
                "Pour comparer les effets fixes de deux modèles mixtes lme4, il faut les ajuster avec {REML=FALSE}.",
            ),
            "stale": "Le spectromètre de masse demande {45 minutes} de chauffe avant une mesure.",
        },
        "de": {
            "notes": [
                (
                    "Zotero",
                    "Literaturverwaltung",
                    "Die Zotero-Bibliothek synchronisiert alle {15 Minuten} mit der Gruppe.",
                    "Jedes Paper bekommt ein Schlagwort für sein Kapitel.",
                ),
                (
                    "Massenspektrometer",
                    "MS",
                    "Das Massenspektrometer braucht {30 Minuten} Aufwärmzeit vor einer Messung.",
                    "Die Kalibrierung nutzt die Standardmischung des Herstellers.",
                ),
                (
                    "Statistik",
                    "Auswertung",
                    "Die Gruppe berichtet Effektstärken mit {95 %}-Konfidenzintervallen.",
                    "Analysen werden bei OSF präregistriert.",
                ),
            ],
            "project": "Dissertation Kapitel 3",
            "lessons": [
                (
                    0,
                    "Zotero verliert die PDF-Links, wenn der Datenordner umzieht, außer {Better BibTeX} hält die Schlüssel.",
                ),
                (
                    1,
                    "Das Massenspektrometer driftet um {0,4 ppm}, wenn der Raum über 24 Grad kommt.",
                ),
                (
                    2,
                    "Gemischte Modelle in lme4 brauchen {REML=FALSE}, um feste Effekte zu vergleichen.",
                ),
                (
                    1,
                    "Die Quelle des Massenspektrometers muss nach {200 Injektionen} gereinigt werden.",
                ),
            ],
            "paraphrase": (
                2,
                "Wer feste Effekte zweier lme4-Modelle vergleicht, passt sie mit {REML=FALSE} an.",
            ),
            "stale": "Das Massenspektrometer braucht {45 Minuten} Aufwärmzeit vor einer Messung.",
        },
    },
    "writing": {
        "en": {
            "notes": [
                (
                    "Scrivener",
                    "manuscript app",
                    "The manuscript is backed up to Dropbox every {20 minutes}.",
                    "Each chapter is its own folder.",
                ),
                (
                    "Editor feedback",
                    "Marta's notes",
                    "Marta returns each chapter within {two weeks}.",
                    "Her comments arrive as tracked changes.",
                ),
                (
                    "Pandoc",
                    "ebook build",
                    "The ebook is built with Pandoc from the {Markdown export}.",
                    "The cover lives in the assets folder.",
                ),
            ],
            "project": "Second novel",
            "lessons": [
                (
                    0,
                    "Scrivener compiles footnotes as endnotes unless {Compile As-Is} is set on the section.",
                ),
                (2, "Pandoc drops the cover from the EPUB without {--epub-cover-image}."),
                (1, "Editor feedback arrives faster when chapters stay under {6,000 words}."),
                (2, "Pandoc smart quotes break French text unless {-f markdown-smart} is used."),
            ],
            "paraphrase": (
                1,
                "Chapters shorter than {6,000 words} get the editor feedback back sooner.",
            ),
            "stale": "Marta returns each chapter within {three weeks}.",
        },
        "es": {
            "notes": [
                (
                    "Scrivener",
                    "manuscrito",
                    "El manuscrito se copia a Dropbox cada {20 minutos}.",
                    "Cada capítulo es su propia carpeta.",
                ),
                (
                    "Comentarios de la editora",
                    "notas de Marta",
                    "Marta devuelve cada capítulo en {dos semanas}.",
                    "Sus comentarios llegan como control de cambios.",
                ),
                (
                    "Pandoc",
                    "libro electrónico",
                    "El libro electrónico se genera con Pandoc desde la {exportación en Markdown}.",
                    "La portada está en la carpeta de recursos.",
                ),
            ],
            "project": "Segunda novela",
            "lessons": [
                (
                    0,
                    "Scrivener compila las notas al pie como notas finales salvo que la sección tenga {Compile As-Is}.",
                ),
                (2, "Pandoc quita la portada del EPUB sin {--epub-cover-image}."),
                (
                    1,
                    "Los comentarios de la editora llegan antes si los capítulos no pasan de {6.000 palabras}.",
                ),
                (
                    2,
                    "Las comillas tipográficas de Pandoc rompen el texto francés si no se usa {-f markdown-smart}.",
                ),
            ],
            "paraphrase": (
                1,
                "Con capítulos de menos de {6.000 palabras} los comentarios de la editora vuelven antes.",
            ),
            "stale": "Marta devuelve cada capítulo en {tres semanas}.",
        },
        "fr": {
            "notes": [
                (
                    "Scrivener",
                    "manuscrit",
                    "Le manuscrit est copié sur Dropbox toutes les {20 minutes}.",
                    "Chaque chapitre a son propre dossier.",
                ),
                (
                    "Retours de l'éditrice",
                    "notes de Marta",
                    "Marta rend chaque chapitre en {deux semaines}.",
                    "Ses remarques arrivent en suivi des modifications.",
                ),
                (
                    "Pandoc",
                    "livre numérique",
                    "Le livre numérique est produit avec Pandoc depuis l'{export Markdown}.",
                    "La couverture est dans le dossier des ressources.",
                ),
            ],
            "project": "Deuxième roman",
            "lessons": [
                (
                    0,
                    "Scrivener compile les notes de bas de page en notes de fin sauf si la section a {Compile As-Is}.",
                ),
                (2, "Pandoc retire la couverture de l'EPUB sans {--epub-cover-image}."),
                (
                    1,
                    "Les retours de l'éditrice arrivent plus vite si les chapitres restent sous {6 000 mots}.",
                ),
                (
                    2,
                    "Les guillemets typographiques de Pandoc cassent le texte français sans {-f markdown-smart}.",
                ),
            ],
            "paraphrase": (
                1,
                "Avec des chapitres de moins de {6 000 mots}, les retours de l'éditrice reviennent plus tôt.",
            ),
            "stale": "Marta rend chaque chapitre en {trois semaines}.",
        },
        "de": {
            "notes": [
                (
                    "Scrivener",
                    "Manuskript",
                    "Das Manuskript wird alle {20 Minuten} in die Dropbox gesichert.",
                    "Jedes Kapitel ist ein eigener Ordner.",
                ),
                (
                    "Lektorat",
                    "Martas Anmerkungen",
                    "Marta gibt jedes Kapitel innerhalb von {zwei Wochen} zurück.",
                    "Ihre Anmerkungen kommen als Änderungsverfolgung.",
                ),
                (
                    "Pandoc",
                    "E-Book",
                    "Das E-Book wird mit Pandoc aus dem {Markdown-Export} gebaut.",
                    "Das Cover liegt im Ordner assets.",
                ),
            ],
            "project": "Zweiter Roman",
            "lessons": [
                (
                    0,
                    "Scrivener setzt Fußnoten als Endnoten, außer der Abschnitt steht auf {Compile As-Is}.",
                ),
                (2, "Pandoc lässt das Cover im EPUB weg ohne {--epub-cover-image}."),
                (
                    1,
                    "Das Lektorat antwortet schneller, wenn Kapitel unter {6.000 Wörtern} bleiben.",
                ),
                (
                    2,
                    "Die typografischen Anführungszeichen von Pandoc zerstören französischen Text ohne {-f markdown-smart}.",
                ),
            ],
            "paraphrase": (
                1,
                "Kapitel mit weniger als {6.000 Wörtern} bekommen das Lektorat schneller zurück.",
            ),
            "stale": "Marta gibt jedes Kapitel innerhalb von {drei Wochen} zurück.",
        },
    },
    "medicine": {
        "en": {
            "notes": [
                (
                    "Night shift",
                    "nights",
                    "The night shift handover starts at {07:15}.",
                    "Handover follows the SBAR order.",
                ),
                (
                    "Insulin protocol",
                    "insulin",
                    "The sliding scale is checked every {4 hours}.",
                    "Doses are double-signed.",
                ),
                (
                    "EHR",
                    "charting system",
                    "The EHR logs out idle sessions after {10 minutes}.",
                    "Orders need a second click to sign.",
                ),
            ],
            "project": "Ward audit",
            "lessons": [
                (1, "The insulin pumps on ward B need the {50 mL} syringes, the 20 mL ones jam."),
                (2, "The EHR drops unsigned notes at {midnight} when the day closes."),
                (0, "On the night shift the pharmacy answers on extension {4412}."),
                (
                    1,
                    "The insulin protocol asks for a glucose check {30 minutes} after a correction dose.",
                ),
            ],
            "paraphrase": (
                2,
                "Notes left unsigned in the EHR vanish at {midnight} when the day closes.",
            ),
            "stale": "The night shift handover starts at {07:30}.",
        },
        "es": {
            "notes": [
                (
                    "Turno de noche",
                    "noches",
                    "El relevo del turno de noche empieza a las {07:15}.",
                    "El relevo sigue el orden SBAR.",
                ),
                (
                    "Protocolo de insulina",
                    "insulina",
                    "La pauta móvil se revisa cada {4 horas}.",
                    "Las dosis se firman por dos personas.",
                ),
                (
                    "Historia clínica electrónica",
                    "HCE",
                    "La HCE cierra las sesiones inactivas a los {10 minutos}.",
                    "Las órdenes necesitan un segundo clic para firmarse.",
                ),
            ],
            "project": "Auditoría de la planta",
            "lessons": [
                (
                    1,
                    "Las bombas de insulina de la planta B necesitan jeringas de {50 mL}; las de 20 mL se atascan.",
                ),
                (2, "La HCE borra las notas sin firmar a {medianoche} al cerrar el día."),
                (0, "En el turno de noche la farmacia contesta en la extensión {4412}."),
                (
                    1,
                    "El protocolo de insulina pide una glucemia {30 minutos} después de una dosis de corrección.",
                ),
            ],
            "paraphrase": (
                2,
                "Las notas que quedan sin firmar en la HCE desaparecen a {medianoche} al cerrar el día.",
            ),
            "stale": "El relevo del turno de noche empieza a las {07:30}.",
        },
        "fr": {
            "notes": [
                (
                    "Garde de nuit",
                    "nuits",
                    "La relève de la garde de nuit commence à {07:15}.",
                    "La relève suit l'ordre SBAR.",
                ),
                (
                    "Protocole insuline",
                    "insuline",
                    "Le protocole d'insuline est revu toutes les {4 heures}.",
                    "Les doses sont contresignées.",
                ),
                (
                    "Dossier patient informatisé",
                    "DPI",
                    "Le DPI ferme les sessions inactives après {10 minutes}.",
                    "Les prescriptions demandent un second clic pour être signées.",
                ),
            ],
            "project": "Audit du service",
            "lessons": [
                (
                    1,
                    "Les pompes à insuline du service B demandent les seringues de {50 mL} ; celles de 20 mL se bloquent.",
                ),
                (2, "Le DPI efface les notes non signées à {minuit} à la clôture de la journée."),
                (0, "Pendant la garde de nuit, la pharmacie répond au poste {4412}."),
                (
                    1,
                    "Le protocole insuline demande une glycémie {30 minutes} après une dose de correction.",
                ),
            ],
            "paraphrase": (
                2,
                "Les notes laissées non signées dans le DPI disparaissent à {minuit} à la clôture.",
            ),
            "stale": "La relève de la garde de nuit commence à {07:30}.",
        },
        "de": {
            "notes": [
                (
                    "Nachtdienst",
                    "Nächte",
                    "Die Übergabe des Nachtdienstes beginnt um {07:15}.",
                    "Die Übergabe folgt dem SBAR-Schema.",
                ),
                (
                    "Insulinschema",
                    "Insulin",
                    "Das Korrekturschema wird alle {4 Stunden} geprüft.",
                    "Dosen werden doppelt gegengezeichnet.",
                ),
                (
                    "Elektronische Patientenakte",
                    "ePA",
                    "Die ePA meldet inaktive Sitzungen nach {10 Minuten} ab.",
                    "Anordnungen brauchen einen zweiten Klick zum Signieren.",
                ),
            ],
            "project": "Stationsaudit",
            "lessons": [
                (
                    1,
                    "Die Insulinpumpen auf Station B brauchen die {50-mL}-Spritzen, die 20-mL-Spritzen klemmen.",
                ),
                (2, "Die ePA löscht unsignierte Notizen um {Mitternacht} beim Tagesabschluss."),
                (0, "Im Nachtdienst erreicht man die Apotheke unter Durchwahl {4412}."),
                (
                    1,
                    "Das Insulinschema verlangt eine Blutzuckerkontrolle {30 Minuten} nach einer Korrekturdosis.",
                ),
            ],
            "paraphrase": (
                2,
                "Unsignierte Notizen in der ePA verschwinden um {Mitternacht} beim Tagesabschluss.",
            ),
            "stale": "Die Übergabe des Nachtdienstes beginnt um {07:30}.",
        },
    },
    "business": {
        "en": {
            "notes": [
                (
                    "Shopify",
                    "the shop",
                    "The shop's payouts arrive every {Friday}.",
                    "Products are grouped by season.",
                ),
                (
                    "Invoices",
                    "billing",
                    "Invoices are due within {30 days}.",
                    "Every invoice gets a number from the accounting tool.",
                ),
                (
                    "Suppliers",
                    "vendors",
                    "The coffee supplier delivers on {Tuesdays}.",
                    "Orders go out by email the week before.",
                ),
            ],
            "project": "Spring catalogue",
            "lessons": [
                (0, "Shopify holds payouts for {72 hours} after a chargeback."),
                (1, "Invoices to German clients need the {USt-IdNr} or the VAT is wrong."),
                (2, "The coffee supplier adds a fee under {12 bags} per order."),
                (0, "Shopify discount codes stop working when the theme's {cart drawer} is off."),
            ],
            "paraphrase": (
                2,
                "Below {12 bags} an order, the coffee supplier charges an extra fee.",
            ),
            "stale": "Invoices are due within {14 days}.",
        },
        "es": {
            "notes": [
                (
                    "Shopify",
                    "la tienda",
                    "Los pagos de la tienda llegan cada {viernes}.",
                    "Los productos se agrupan por temporada.",
                ),
                (
                    "Facturas",
                    "facturación",
                    "Las facturas vencen a los {30 días}.",
                    "Cada factura lleva un número del programa de contabilidad.",
                ),
                (
                    "Proveedores",
                    "proveedor",
                    "El proveedor de café entrega los {martes}.",
                    "Los pedidos salen por correo la semana anterior.",
                ),
            ],
            "project": "Catálogo de primavera",
            "lessons": [
                (0, "Shopify retiene los pagos {72 horas} después de un contracargo."),
                (1, "Las facturas a clientes alemanes necesitan el {USt-IdNr} o el IVA sale mal."),
                (2, "El proveedor de café cobra un recargo por debajo de {12 sacos} por pedido."),
                (
                    0,
                    "Los códigos de descuento de Shopify dejan de funcionar si el {cart drawer} del tema está apagado.",
                ),
            ],
            "paraphrase": (
                2,
                "Con menos de {12 sacos} por pedido, el proveedor de café cobra un recargo.",
            ),
            "stale": "Las facturas vencen a los {14 días}.",
        },
        "fr": {
            "notes": [
                (
                    "Shopify",
                    "la boutique",
                    "Les versements de la boutique arrivent chaque {vendredi}.",
                    "Les produits sont groupés par saison.",
                ),
                (
                    "Factures",
                    "facturation",
                    "Les factures sont payables sous {30 jours}.",
                    "Chaque facture reçoit un numéro du logiciel comptable.",
                ),
                (
                    "Fournisseurs",
                    "fournisseur",
                    "Le fournisseur de café livre le {mardi}.",
                    "Les commandes partent par courriel la semaine d'avant.",
                ),
            ],
            "project": "Catalogue de printemps",
            "lessons": [
                (0, "Shopify bloque les versements {72 heures} après une rétrofacturation."),
                (
                    1,
                    "Les factures aux clients allemands exigent le {USt-IdNr}, sinon la TVA est fausse.",
                ),
                (2, "Le fournisseur de café ajoute des frais sous {12 sacs} par commande."),
                (
                    0,
                    "Les codes promo Shopify ne marchent plus quand le {cart drawer} du thème est coupé.",
                ),
            ],
            "paraphrase": (
                2,
                "En dessous de {12 sacs} par commande, le fournisseur de café facture des frais.",
            ),
            "stale": "Les factures sont payables sous {14 jours}.",
        },
        "de": {
            "notes": [
                (
                    "Shopify",
                    "der Shop",
                    "Die Auszahlungen des Shops kommen jeden {Freitag}.",
                    "Die Produkte sind nach Saison gruppiert.",
                ),
                (
                    "Rechnungen",
                    "Buchhaltung",
                    "Rechnungen sind innerhalb von {30 Tagen} fällig.",
                    "Jede Rechnung bekommt eine Nummer aus der Buchhaltung.",
                ),
                (
                    "Lieferanten",
                    "Lieferant",
                    "Der Kaffeelieferant liefert {dienstags}.",
                    "Bestellungen gehen eine Woche vorher per Mail raus.",
                ),
            ],
            "project": "Frühjahrskatalog",
            "lessons": [
                (0, "Shopify hält Auszahlungen nach einer Rückbuchung {72 Stunden} zurück."),
                (
                    1,
                    "Rechnungen an deutsche Kunden brauchen die {USt-IdNr}, sonst stimmt die Mehrwertsteuer nicht.",
                ),
                (
                    2,
                    "Der Kaffeelieferant berechnet unter {12 Säcken} pro Bestellung einen Aufschlag.",
                ),
                (
                    0,
                    "Shopify-Rabattcodes funktionieren nicht mehr, wenn der {cart drawer} des Themes aus ist.",
                ),
            ],
            "paraphrase": (
                2,
                "Unter {12 Säcken} pro Bestellung nimmt der Kaffeelieferant einen Aufschlag.",
            ),
            "stale": "Rechnungen sind innerhalb von {14 Tagen} fällig.",
        },
    },
    "software": {
        "en": {
            "notes": [
                (
                    "CI pipeline",
                    "CI",
                    "The CI pipeline runs the full suite in {12 minutes}.",
                    "Merges need one green run.",
                ),
                (
                    "Redis",
                    "cache",
                    "Redis keeps sessions for {24 hours}.",
                    "The cache runs beside the API.",
                ),
                (
                    "Kubernetes",
                    "k8s",
                    "The cluster autoscaler keeps at least {3 nodes}.",
                    "Deploys go through Argo CD.",
                ),
            ],
            "project": "Billing API",
            "lessons": [
                (
                    0,
                    "The CI pipeline caches wheels only when {PIP_CACHE_DIR} points inside the workspace.",
                ),
                (1, "Redis evicts session keys early unless {maxmemory-policy} is volatile-lru."),
                (
                    2,
                    "Kubernetes restarts the API pod when the readiness probe waits less than {20 seconds}.",
                ),
                (
                    1,
                    "Redis in the staging cluster needs {appendonly yes} or a restart loses the queue.",
                ),
            ],
            "paraphrase": (
                1,
                "Unless {maxmemory-policy} is volatile-lru, Redis throws session keys out early.",
            ),
            "stale": "The CI pipeline runs the full suite in {19 minutes}.",
        },
        "es": {
            "notes": [
                (
                    "Integración continua",
                    "CI",
                    "La integración continua ejecuta la suite completa en {12 minutos}.",
                    "Para fusionar hace falta una ejecución en verde.",
                ),
                (
                    "Redis",
                    "caché",
                    "Redis guarda las sesiones {24 horas}.",
                    "La caché corre junto a la API.",
                ),
                (
                    "Kubernetes",
                    "k8s",
                    "El autoescalado del clúster mantiene al menos {3 nodos}.",
                    "Los despliegues pasan por Argo CD.",
                ),
            ],
            "project": "API de facturación",
            "lessons": [
                (
                    0,
                    "La CI solo guarda las wheels en caché si {PIP_CACHE_DIR} apunta dentro del espacio de trabajo.",
                ),
                (
                    1,
                    "Redis expulsa antes de tiempo las claves de sesión salvo que {maxmemory-policy} sea volatile-lru.",
                ),
                (
                    2,
                    "Kubernetes reinicia el pod de la API si la sonda de disponibilidad espera menos de {20 segundos}.",
                ),
                (
                    1,
                    "Redis en el clúster de pruebas necesita {appendonly yes} o un reinicio pierde la cola.",
                ),
            ],
            "paraphrase": (
                1,
                "Si {maxmemory-policy} no es volatile-lru, Redis echa las claves de sesión antes de tiempo.",
            ),
            "stale": "La integración continua ejecuta la suite completa en {19 minutos}.",
        },
        "fr": {
            "notes": [
                (
                    "Intégration continue",
                    "CI",
                    "L'intégration continue exécute toute la suite en {12 minutes}.",
                    "Une fusion demande une exécution verte.",
                ),
                (
                    "Redis",
                    "cache",
                    "Redis garde les sessions {24 heures}.",
                    "Le cache tourne à côté de l'API.",
                ),
                (
                    "Kubernetes",
                    "k8s",
                    "L'autoscaler du cluster garde au moins {3 nœuds}.",
                    "Les déploiements passent par Argo CD.",
                ),
            ],
            "project": "API de facturation",
            "lessons": [
                (
                    0,
                    "La CI ne met les wheels en cache que si {PIP_CACHE_DIR} pointe dans l'espace de travail.",
                ),
                (
                    1,
                    "Redis évince trop tôt les clés de session sauf si {maxmemory-policy} vaut volatile-lru.",
                ),
                (
                    2,
                    "Kubernetes redémarre le pod de l'API quand la sonde de disponibilité attend moins de {20 secondes}.",
                ),
                (
                    1,
                    "Redis sur le cluster de recette demande {appendonly yes}, sinon un redémarrage perd la file.",
                ),
            ],
            "paraphrase": (
                1,
                "Tant que {maxmemory-policy} ne vaut pas volatile-lru, Redis jette les clés de session trop tôt.",
            ),
            "stale": "L'intégration continue exécute toute la suite en {19 minutes}.",
        },
        "de": {
            "notes": [
                (
                    "CI-Pipeline",
                    "CI",
                    "Die CI-Pipeline führt die ganze Testsuite in {12 Minuten} aus.",
                    "Ein Merge braucht einen grünen Lauf.",
                ),
                (
                    "Redis",
                    "Cache",
                    "Redis hält Sitzungen {24 Stunden}.",
                    "Der Cache läuft neben der API.",
                ),
                (
                    "Kubernetes",
                    "k8s",
                    "Der Cluster-Autoscaler hält mindestens {3 Knoten}.",
                    "Deployments laufen über Argo CD.",
                ),
            ],
            "project": "Abrechnungs-API",
            "lessons": [
                (
                    0,
                    "Die CI-Pipeline cacht Wheels nur, wenn {PIP_CACHE_DIR} in den Workspace zeigt.",
                ),
                (
                    1,
                    "Redis verdrängt Sitzungsschlüssel zu früh, außer {maxmemory-policy} steht auf volatile-lru.",
                ),
                (
                    2,
                    "Kubernetes startet den API-Pod neu, wenn die Readiness-Probe weniger als {20 Sekunden} wartet.",
                ),
                (
                    1,
                    "Redis im Staging-Cluster braucht {appendonly yes}, sonst verliert ein Neustart die Queue.",
                ),
            ],
            "paraphrase": (
                1,
                "Solange {maxmemory-policy} nicht auf volatile-lru steht, wirft Redis Sitzungsschlüssel zu früh raus.",
            ),
            "stale": "Die CI-Pipeline führt die ganze Testsuite in {19 Minuten} aus.",
        },
    },
}
