#!/bin/sh
# Install (or remove) Vault Companion's desktop entry and icons for the current user.
#
#   sh installers/linux/install-desktop.sh                    menu entry + icons
#   sh installers/linux/install-desktop.sh --autostart        ... and start at login
#   sh installers/linux/install-desktop.sh --exec /opt/vault-companion/companion
#                                                             entries start that binary
#   sh installers/linux/install-desktop.sh --uninstall        remove all of it
#
# Files go to $XDG_DATA_HOME (default ~/.local/share): applications/vault-companion.desktop and
# icons/hicolor/{scalable,symbolic}/apps/. The autostart entry goes to
# $XDG_CONFIG_HOME/autostart/vault-companion.desktop, the same file the app's own
# "Start at login" setting writes, so the two never start it twice.
# Packagers: copy resources/linux/ into /usr/share yourself; do not install the autostart
# entry system-wide (start at login is each user's choice).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/vault-companion.desktop" ]; then
    src=$here                                   # the one-folder build's desktop/ folder
else
    src=$here/../../resources/linux             # in a source checkout
fi
data=${XDG_DATA_HOME:-$HOME/.local/share}
config=${XDG_CONFIG_HOME:-$HOME/.config}
app_entry=$data/applications/vault-companion.desktop
auto_entry=$config/autostart/vault-companion.desktop
icon=$data/icons/hicolor/scalable/apps/vault-companion.svg
symbolic=$data/icons/hicolor/symbolic/apps/vault-companion-symbolic.svg

exec_path=
autostart=no
uninstall=no
while [ $# -gt 0 ]; do
    case $1 in
        --exec) exec_path=${2:?--exec needs the path of the companion binary}; shift ;;
        --autostart) autostart=yes ;;
        --uninstall) uninstall=yes ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

refresh() {
    if command -v update-desktop-database >/dev/null 2>&1; then
        update-desktop-database -q "$data/applications" 2>/dev/null || true
    fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1; then
        gtk-update-icon-cache -q -t "$data/icons/hicolor" 2>/dev/null || true
    fi
}

if [ "$uninstall" = yes ]; then
    rm -f "$app_entry" "$auto_entry" "$icon" "$symbolic"
    refresh
    echo "removed Vault Companion's desktop entries and icons"
    exit 0
fi

# inside the one-folder build (vault-companion/desktop/), the entries start that build's binary
if [ -z "$exec_path" ] && [ "$src" = "$here" ] && [ -x "$here/../companion" ]; then
    exec_path=$(cd "$here/.." && pwd)/companion
fi

if [ -n "$exec_path" ]; then
    case $exec_path in
        /*) ;;
        *) echo "--exec needs an absolute path" >&2; exit 2 ;;
    esac
    case $exec_path in
        *\"*|*\`*|*\$*|*\\*|*%*) echo "--exec: the path may not contain \" \` \$ \\ or %" >&2; exit 2 ;;
    esac
    [ -x "$exec_path" ] || { echo "--exec: $exec_path is not an executable file" >&2; exit 2; }
fi

# copy a desktop entry, pointing Exec/TryExec at --exec when given
install_entry() {
    mkdir -p "$(dirname "$2")"
    tmp=$2.tmp.$$
    while IFS= read -r line || [ -n "$line" ]; do
        if [ -n "$exec_path" ]; then
            case $line in
                Exec=*) line="Exec=\"$exec_path\"" ;;
                TryExec=*) line="TryExec=$exec_path" ;;
            esac
        fi
        printf '%s\n' "$line"
    done < "$1" > "$tmp"
    chmod 644 "$tmp"
    mv -f "$tmp" "$2"
}

install_entry "$src/vault-companion.desktop" "$app_entry"
mkdir -p "$(dirname "$icon")" "$(dirname "$symbolic")"
cp "$src/icons/hicolor/scalable/apps/vault-companion.svg" "$icon"
cp "$src/icons/hicolor/symbolic/apps/vault-companion-symbolic.svg" "$symbolic"
echo "installed $app_entry and the icons"
if [ "$autostart" = yes ]; then
    install_entry "$src/vault-companion-autostart.desktop" "$auto_entry"
    echo "installed $auto_entry: Vault Companion starts at login"
fi
refresh
