; Inno Setup script for Vault Companion (Inno Setup 6.2 or later).
;
; Packs the one-folder PyInstaller build, dist\vault-companion\ (python packaging\build.py on
; Windows), into a per-user installer: no administrator rights, installed under
; %LOCALAPPDATA%\Programs\Vault Companion. Build it from the repository root with:
;
;   iscc /DAppVersion=0.1.0 installers\windows\vault-companion.iss
;
; The optional "start at login" task writes the same Run-key value the app's own setting uses
; (HKCU\Software\Microsoft\Windows\CurrentVersion\Run, value VaultCompanion), so the checkbox in
; Settings and this task agree, and uninstalling removes it.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#define AppName "Vault Companion"
#define BuildDir "..\..\dist\vault-companion"
#define GuiExe "vault-companion.exe"

[Setup]
AppId={{6F1C2B9E-4D0A-4B7E-9C55-2E7A1D3F8B41}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=Vault Companion team
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=vault-companion-{#AppVersion}-setup
SetupIconFile=..\..\build\icons\vault-companion.ico
UninstallDisplayIcon={app}\{#GuiExe}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
CloseApplications=yes
RestartApplications=no

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"
Name: "spanish"; MessagesFile: "compiler:Languages\Spanish.isl"

[CustomMessages]
english.StartAtLogin=Start {#AppName} when I log in
spanish.StartAtLogin=Iniciar {#AppName} al iniciar sesión
english.AutostartGroup=Start at login:
spanish.AutostartGroup=Inicio automático:

[Tasks]
Name: "startatlogin"; Description: "{cm:StartAtLogin}"; GroupDescription: "{cm:AutostartGroup}"
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
; the whole one-folder build: vault-companion.exe (tray), companion.exe (command line), _internal
Source: "{#BuildDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\{#AppName}"; Filename: "{app}\{#GuiExe}"
Name: "{group}\{cm:UninstallProgram,{#AppName}}"; Filename: "{uninstallexe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#GuiExe}"; Tasks: desktopicon

[Registry]
; start at login: the same key and value name as the app's Settings > Start at login
Root: HKCU; Subkey: "Software\Microsoft\Windows\CurrentVersion\Run"; ValueType: string; ValueName: "VaultCompanion"; ValueData: """{app}\{#GuiExe}"""; Flags: uninsdeletevalue; Tasks: startatlogin

[Run]
Filename: "{app}\{#GuiExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallRun]
; stop a running tray app so its files can be removed
Filename: "{sys}\taskkill.exe"; Parameters: "/IM {#GuiExe} /F"; Flags: runhidden; RunOnceId: "StopTray"

[UninstallDelete]
; the app's own files only; the vault and the device state in %APPDATA% are the user's
Type: filesandordirs; Name: "{app}\_internal"
