# ruff: noqa: E501 - one phrase table a line reads best
"""The injection guard's phrase tables: one table per attack family and language.

A `Phrase` matches a sentence when every pattern of `all_of` is found in it (in any order, so
word order and inflection differ freely between languages) and its `unless` pattern is not
(``never ask for the password`` is advice, not an attack). Matching is case-insensitive, on each
view of the text (`companion.memory.guard_text.views`). Languages: en, es, fr, de, pt, it, zh,
ar, ru, ja, tr; ``any`` holds language-free code shapes.

Families (the rule id a refusal names):
  run-code          run or fetch code: ``curl … | sh``, ``wget … && bash``, ``iex(iwr …)``,
                    "download … and run it", running a script URL;
  conceal           hide something from the person;
  exfiltrate        send data, keys or drafts to an outside address;
  role-override     "SYSTEM:", developer mode, "you are now … without rules", "your real
                    instructions are in …", ignore the previous instructions;
  persist           insist on staying in memory: never forget this instruction, re-add it;
  ask-secret        ask the person for a password, a PIN or a 2FA / verification code;
  disable-safety    switch off the guard, safety checks or confirmations, delete without asking.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phrase:
    all_of: tuple[str, ...]
    unless: str | None = None


def P(*all_of: str, unless: str | None = None) -> Phrase:
    return Phrase(tuple(all_of), unless)


# --- shared terms ------------------------------------------------------------------------------

URL = r"(?:https?|ftp|s3)://\S+"
SCRIPT_URL = r"(?:https?|ftp)://\S+?\.(?:sh|bash|zsh|ps1|psm1|py|pl|rb|js|exe|bin|bat|cmd|msi|vbs|jar|run|elf|apk)\b"
EXTERNAL = (
    r"(?:(?:https?|ftp|s3)://|[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.(?!(?:service|socket|timer|target|mount|path)\b)[a-z]{2,}\b|\b(?:webhooks?|pastebin|gist|requestbin|ngrok|transfer\.sh)\b|"
    r"\b(?:external|remote|outside)\s+(?:server|host|site|address)\b|\bservidor\s+(?:externo|remoto)\b|"
    r"\bserveur\s+(?:externe|distant)\b|\bexterne[nr]?\s+server\b|\bserver\s+(?:esterno|remoto)\b|"
    r"外部服务器|外部サーバー|خادم\s+خارجي|\bвнешн\w+\s+сервер\w*|\bharici\s+sunucu\w*)"
)
SHELL = r"(?:(?:ba|z|k|da|fi|c|tc)?sh|python[\d.]*|perl|ruby|node|php|iex|invoke-expression|pwsh|powershell)\b"
YOU = (
    r"(?:\byou\b|\byou're\b|\beres\b|\best[áa]s\b|\btu\s+es\b|\bvous\s+[êe]tes\b|\bdu\s+bist\b|"
    r"\bvoc[êe]\s+est[áa]\b|\bsei\b|\bты\b|\bвы\b|你|あなた|أنت|\bsen\b|\w+ndas[ıi]n\b|\bart[ıi]k\b)"
)
DEVMODE = (
    r"(?:\bdeveloper\s+mode\b|\bdev\s+mode\b|\bgod\s+mode\b|\bdan\s+mode\b|\bjailbr[eo]\w*|"
    r"\bmodo\s+(?:de\s+)?desa?rroll?ador\b|\bmodo\s+desenvolvedor\b|\bmode\s+d[ée]veloppeur\b|"
    r"\bentwicklermodus\b|\bmodalit[àa]\s+sviluppatore\b|开发者模式|開発者モード|وضع\s+المطور|"
    r"\bрежим\w*\s+разработчика\b|\bgeli[şs]tirici\s+mod\w*)"
)
NO_RULES = (
    r"(?:\bno\s+(?:rules|restrictions|limits|filters|guardrails)\b|\bwithout\s+(?:any\s+)?(?:rules|restrictions|limits|filters)\b|"
    r"\bunrestricted\b|\bsin\s+(?:normas|reglas|l[íi]mites|restricciones|filtros)\b|"
    r"\bsans\s+(?:aucune\s+)?(?:restriction|limite|r[èe]gle)s?\b|\bkeine\w*\s+(?:einschr[äa]nkung|regeln|grenzen)\w*|"
    r"\bohne\s+(?:einschr[äa]nkung|regeln|grenzen)\w*|\bsem\s+(?:restri[çc][õo]es|regras|limites)\b|"
    r"\bsenza\s+(?:restrizioni|regole|limiti)\b|没有任何限制|不受限制|无限制|بدون\s+(?:أي\s+)?قيود|"
    r"\bбез\s+(?:ограничений|правил)\b|制限はありません|制限なし|制限のない|\bk[ıi]s[ıi]tlama\s+yok\b|\bs[ıi]n[ıi]rs[ıi]z\b)"
)
SYSTEM_LABEL = (
    r"(?:^|\n)\s*[\[(<#*]*\s*(?:new\s+)?(?:system|sistema|syst[èe]me|система|s[iİı]stem|系统|系統|システム|النظام)"
    r"\s*[\])>*]*\s*[:：]"
)
INSTRUCTIONS = (
    r"(?:\binstructions?\b|\borders\b|\bcommands\b|\bdirectives\b|\binstrucciones\b|\b[óo]rdenes\b|\bconsignes\b|"
    r"\binstructions\b|\banweisungen\b|\bbefehle\b|\binstru[çc][õo]es\b|\bistruzioni\b|指令|指示|\bинструкци\w*|"
    r"التعليمات|\btalimat\w*)"
)
IGNORE = (
    r"(?:\bignor\w*|\bolvid\w*|\boublie\w*|\bvergiss\w*|\besque[çc]a\w*|\bdimentic\w*|\bdisregard\w*|"
    r"\bигнорир\w*|\bзабудь\w*|\byok\s+say|\bg[öo]rmezden\s+gel\w*|忽略|无视|無視|تجاهل)"
)
PREVIOUS = (
    r"(?:\b(?:previous|prior|all|above|earlier|anteriores?|previas?|todas|toutes|pr[ée]c[ée]dentes?|alle|"
    r"vorherigen|bisherigen|tutte|precedenti|все|предыдущие|прежние|t[üu]m|[öo]nceki)\b|之前|以前|所有|全部|すべて|السابقة|جميع)"
)
REAL = (
    r"(?:\b(?:real|true|actual|verdaderas?|vraies?|v[ée]ritables?|eigentlich\w*|wirklich\w*|echten?|"
    r"verdadeiras?|vere|настоящие|истинные|ger[çc]ek)\b|真正|本当の|الحقيقية)"
)
YOUR = r"(?:\b(?:your|tus|tes|vos|deine\w*|suas|tue|твои|ваши|senin)\b|你|あなた)"

# --- run or fetch code ---------------------------------------------------------------------------

_DOWNLOAD = {
    "en": r"\b(?:download\w*|fetch\w*|grab\w*|retriev\w*|pull\s+down)\b",
    "es": r"\b(?:descarg\w*|baj[aeé]\w*|b[áa]jal\w*)",
    "fr": r"\b(?:t[ée]l[ée]charg\w*|r[ée]cup[èeé]r\w*)",
    "de": r"\b(?:herunter\w*|download\w*)",
    "pt": r"\b(?:baix\w*|descarreg\w*)",
    "it": r"\bscaric\w*",
    "zh": r"(?:下载|获取|拉取)",
    "ar": r"(?:تنزيل|نزل|حمل|تحميل)",
    "ru": r"\b(?:скача\w*|скачи\w*|загруз\w*|выкач\w*)",
    "ja": r"(?:ダウンロード|取得)",
    "tr": r"\bindir\w*",
}
_RUN = {
    "en": r"\b(?:run|runs|running|execute[sd]?|executing|exec|launch\w*|pipe[sd]?|piping)\b",
    "es": r"\b(?:ejec[uú]t\w*|corr[eé]\w*|c[oó]rre\w*|lanz\w*|instal\w*)",
    "fr": r"\b(?:ex[ée]cut\w*|lance\w*|lancer|install\w*)",
    "de": r"\b(?:f[üu]hr\w*|ausf[üu]hr\w*|starte\w*|installier\w*)",
    "pt": r"\b(?:execut\w*|rod(?:e|ar|a)\b|instal\w*)",
    "it": r"\b(?:esegu\w*|avvi\w*|lanci\w*|install\w*)",
    "zh": r"(?:运行|执行|安装|跑)",
    "ar": r"(?:شغل|تشغيل|نفذ|تنفيذ|ثبت|تثبيت)",
    "ru": r"\b(?:выполн\w*|запуст\w*|запуска\w*|установ\w*|исполн\w*)",
    "ja": r"(?:実行|走らせ|インストール|起動)",
    "tr": r"(?:[çc]al[ıi][şs]t[ıi]r\w*|\bkur\b)",
}
RUN_CODE: dict[str, list[Phrase]] = {
    "any": [
        P(
            rf"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|base64\s+(?:-d|--decode|-D)|echo|printf)\b[^\n|]{{0,400}}\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?{SHELL}"
        ),
        P(r"\biex\s*\(|\binvoke-expression\b|\.downloadstring\s*\(|\.downloadfile\s*\("),
        P(
            r"\b(?:curl|wget)\b[^\n]{0,300}?(?:&&|;|\|\|)\s*(?:sudo\s+)?(?:(?:ba|z)?sh\s+\S|chmod\s+\+?[0-7x]|\./|/tmp/|python\d?\s+\S)"
        ),
        P(r"\b(?:ba|z)?sh\s+<\(\s*(?:curl|wget)|\b(?:ba|z)?sh\s+-c\s+[\"']?\$\(\s*(?:curl|wget)"),
        P(r"\b(?:exec|eval)\s*\([^\n]{0,200}?(?:urlopen|requests\.get|urllib|https?://)"),
        P(rf"\bpip\w*\s+(?:it\s+|them\s+|that\s+)?(?:in)?to\s+(?:sudo\s+)?{SHELL}"),
    ],
    **{
        lang: [P(_DOWNLOAD[lang], _RUN[lang], URL), P(_RUN[lang], SCRIPT_URL)] for lang in _DOWNLOAD
    },
}

# --- conceal from the person ---------------------------------------------------------------------

CONCEAL: dict[str, list[Phrase]] = {
    "en": [
        P(
            r"\b(?:do\s+not|don'?t|never|avoid\w*|without|must\s+not|mustn'?t|shouldn'?t|should\s+not|isn'?t|is\s+not|aren'?t|not\s+be)\b",
            r"\b(?:tell|told|telling|mention\w*|inform\w*|say|said|reveal\w*|bring\w*\s+up|disclos\w*|notify\w*|let\s+\S+\s+know|aware)\b",
            r"\b(?:the\s+user|the\s+person|the\s+owner|user|person|owner|human)\b",
        ),
        P(
            r"\bkeep\s+(?:\S+\s+){0,8}?to\s+yourself\b|\b(?:never|not)\s+(?:find|found)\s+out\b|\bbehind\s+\S+\s+back\b|\bin\s+secret\b"
        ),
    ],
    "es": [
        P(
            r"\bno\s+(?:le|les|se\s+l[oa]s?)\s+(?:digas|menciones|cuentes|comentes|avises|hables|reveles|informes)\b"
        ),
        P(
            r"\bno\s+(?:digas|menciones|cuentes|comentes|avises|hables|reveles|informes)\b",
            r"\b(?:usuari[oa]s?|persona|due[ñn][oa])\b",
        ),
        P(
            r"\bno\s+se\s+enter\w*|\bno\s+(?:lo\s+)?sepa\b|\bsin\s+que\s+(?:\S+\s+){0,2}(?:lo\s+)?(?:sepa|note|vea)\b|\ba\s+escondidas\b"
        ),
    ],
    "fr": [
        P(
            r"\bne\s+(?:lui\s+|leur\s+)?(?:dis|dites|mentionne\w*|parle\w*|r[ée]v[eè]le\w*|signale\w*|pr[ée]viens|informe\w*)\b|\brien\s+(?:dire|dit)\b",
            r"\b(?:utilisat\w+|personne|propri[ée]taire|lui|leur)\b",
        ),
        P(
            r"\bpas\s+au\s+courant\b|\b[àa]\s+l'insu\b|\bne\s+(?:le\s+)?sache\s+(?:pas|rien)\b|\bsans\s+(?:le\s+)?(?:lui\s+)?(?:dire|pr[ée]venir|informer|avertir)\b"
        ),
    ],
    "de": [
        P(
            r"\b(?:erw[äa]hn|sag|erz[äa]hl|informier|verrat|benachrichtig|teil)\w*\b",
            r"\b(?:nicht|nie|niemals|keinesfalls|keinen\s+fall|nichts)\b",
            r"\b(?:nutzer\w*|benutzer\w*|anwender\w*|person|besitzer\w*|ihm|ihnen)\b",
        ),
        P(
            r"\berf[äa]hrt\b[^.]{0,80}\bnichts\b|\bnichts\b[^.]{0,40}\b(?:erf[äa]hrt|erfahren|merkt|mitbekommt)\b|\bohne\s+(?:es\s+)?(?:\S+\s+){0,3}zu\s+(?:sagen|erz[äa]hlen|informieren)\b|\bhinter\s+(?:dem|ihrem|seinem)\s+r[üu]cken\b|\bheimlich\b"
        ),
    ],
    "pt": [
        P(
            r"\bn[ãa]o\s+(?:lhe\s+)?(?:conte|diga|mencione|fale|avise|informe|revele|comente)\b",
            r"\b(?:usu[áa]ri[oa]s?|pessoa|dono|dona|lhe|ele|ela)\b",
        ),
        P(
            r"\bn[ãa]o\s+fique\s+sabendo\b|\bsem\s+(?:lhe\s+)?(?:contar|avisar|dizer|informar)\b|\b[àa]s\s+escondidas\b|\bn[ãa]o\s+(?:\S+\s+)?saiba\b"
        ),
    ],
    "it": [
        P(
            r"\bnon\s+(?:gli\s+|le\s+)?(?:dire|dirgli|dirle|dirlo|menzion\w*|raccont\w*|avvis\w*|inform\w*|rivel\w*|parl\w*)\b",
            r"\b(?:utent[ei]|persona|proprietari[oa]|gli|lui|lei)\b",
        ),
        P(
            r"\bnon\s+(?:venga|deve\s+venire)\s+a\s+saper\w*|\bsenza\s+(?:dir\w*|avvis\w*|inform\w*)\b|\bdi\s+nascosto\b|\ball'insaputa\b"
        ),
    ],
    "zh": [
        P(
            r"(?:不要|别|不许|不准|切勿|不得|勿|千万别)[^。，,]{0,6}(?:告诉|告知|透露|提及|提到|说|通知|让)",
            r"(?:用户|使用者|主人|本人|他|她)",
        ),
        P(r"(?:别|不要|不)让[^。]{0,8}知道|瞒着|偷偷|暗中"),
    ],
    "ar": [
        P(
            r"(?:لا\s+(?:تخبر|تقل|تذكر|تعلم|تبلغ)|ألا\s+(?:يعرف|يعلم)|دون\s+(?:أن\s+)?(?:تخبر|يعلم)|بدون\s+علم|سرا)",
            r"(?:المستخدم|صاحب|الشخص)",
        ),
    ],
    "ru": [
        P(
            r"\bне\s+(?:говори|говорите|рассказывай|рассказывайте|сообщай|сообщайте|упоминай|упоминайте|показывай)\b|\bне\s+узна\w*|\bскр(?:ой|ывай|ыть)\b",
            r"(?:пользовател\w*|человек\w*|владел\w*|\bему\b|\bей\b|\bним\b)",
        ),
        P(r"\bтайно\b|\bвтайне\b|\bтак,?\s+чтобы\s+(?:\S+\s+)?не\s+(?:заметил|узнал)\w*"),
    ],
    "ja": [
        P(
            r"(?:言わない|伝えない|知らせない|教えない|話さない|黙って|秘密に|内緒に|知られない|バレない|気づかれない)",
            r"(?:ユーザー|ユーザ|利用者|本人|持ち主)",
        ),
    ],
    "tr": [
        P(
            r"(?:s[öo]yleme|bahsetme|anlatma|haber\s+verme|bildirme|g[öo]sterme)(?:yin|yiniz|\b)",
            r"(?:kullan[ıi]c[ıi]\w*|ki[şs]i\w*|sahib\w*)",
        ),
        P(r"\bhaberi\s+olmas[ıi]n\b|\bfark\s+etmesin\b|\bgizli\s+tut\w*"),
    ],
}

# --- send data elsewhere ---------------------------------------------------------------------------

_SEND = {
    "en": r"\b(?:send|sending|post|posting|upload|uploading|transmit|forward|forwarding|deliver\w*|exfiltrat\w*|leak|beam|attach|copy|mirror|sync|share|paste)\b",
    "es": r"\b(?:env[ií]\w*|mand[ae]\w*|s[uú]b[ea]\w*|reenv[ií]\w*|publica\w*|transmit\w*|compart\w*|copia\w*|adjunt\w*)",
    "fr": r"\b(?:envo[iy]\w*|transf[ée]r\w*|t[ée]l[ée]vers\w*|publi\w*|partag\w*|exp[ée]di\w*|transmet\w*|copi\w*)",
    "de": r"\b(?:sende|senden|sendet|schick\w*|leite\w*|weiterleit\w*|[üu]bermittel\w*|hochlad\w*|lade|teile\w*|poste\w*|kopier\w*)\b",
    "pt": r"\b(?:envi[ae]\w*|mand[ae]\w*|encaminh\w*|compartilh\w*|transmit\w*|suba|carreg\w*|publiqu\w*|copi[ae]\w*)",
    "it": r"\b(?:invi[ao]\w*|inoltr\w*|mand[ai]\w*|caric\w*|condivid\w*|trasmett\w*|pubblic\w*|copi[ao]\w*)",
    "zh": r"(?:发送|发到|上传|转发|发给|寄给|传到|提交到|同步到|分享到|抄送)",
    "ar": r"(?:أرسل|ارسل|إرسال|ارسال|ارفع|رفع|شارك|انشر)",
    "ru": r"\b(?:отправ\w*|пересыл\w*|перешл\w*|выгруз\w*|переда\w*|скинь|шли|залей|загрузи\s+на)",
    "ja": r"(?:送信|送って|送る|転送|アップロード|共有)",
    "tr": r"\b(?:g[öo]nder\w*|ilet\w*|y[üu]kle\w*|payla[şs]\w*|aktar\w*)",
}
EXFILTRATE: dict[str, list[Phrase]] = {lang: [P(send, EXTERNAL)] for lang, send in _SEND.items()}

# --- role and system overrides -------------------------------------------------------------------

ROLE_OVERRIDE: dict[str, list[Phrase]] = {
    "any": [
        P(DEVMODE, YOU),
        P(SYSTEM_LABEL, YOU),
        P(SYSTEM_LABEL, DEVMODE),
        P(NO_RULES, YOU),
        P(REAL, INSTRUCTIONS, YOUR),
        P(IGNORE, PREVIOUS, INSTRUCTIONS),
    ],
    "en": [
        P(
            r"\bnew\s+system\s+(?:message|prompt|instructions?)\b|\b(?:previous|old|original)\s+role\s+(?:is\s+)?(?:revoked|cancell?ed|void|replaced|over)\b"
        ),
        P(r"\bfrom\s+(?:now|this\s+point)\s+on,?\s+you\s+are\b", NO_RULES),
    ],
    "es": [P(r"\ba\s+partir\s+de\s+ahora\s+eres\b|\bahora\s+eres\s+otr[oa]\b|\bya\s+no\s+eres\b")],
}

# --- insist on staying in memory -------------------------------------------------------------------

_MEMORY = r"(?:\bmemor(?:y|ies)\b|\bmemoria\b|\bm[ée]moire\b|\bspeicher\b|\bged[äa]chtnis\b|\bmem[óo]ria\b|记忆|\bпамят\w*|メモリ|記憶|الذاكرة|\bbelle\w*|\bhaf[ıi]za\w*|memory\.md|user\.md)"
PERSIST: dict[str, list[Phrase]] = {
    "en": [
        P(
            r"\bnever\s+forget\s+this\s+(?:instruction|entry|note|message|order)\b|\bthis\s+(?:entry|note|instruction)\s+(?:is|stays?)\s+(?:permanent|mandatory)\b|\bsurviv\w*\s+(?:every|any|all)\s+(?:memory\s+)?(?:clean\w*|prun\w*|review\w*|compaction)"
        ),
        P(
            r"\bre-?add\w*|\b(?:add|put|copy|write|insert|restore)\w*\s+(?:\S+\s+){0,6}?(?:back|again)\b|\brestore\s+it\b",
            r"\b(?:remov\w*|delet\w*|missing|disappear\w*|eras\w*|clean\w*|pruned?|gone)\b",
            _MEMORY,
        ),
    ],
    "es": [
        P(
            r"\bnunca\s+olvides\s+(?:esta|este)\s+(?:instrucci[óo]n|nota|orden|entrada|mensaje)\b|\bdebe\s+permanecer\s+siempre\b"
        ),
        P(
            r"\bvuelve\s+a\s+\w+|\bde\s+nuevo\b|\botra\s+vez\b|\bre(?:a[ñn]ad|escrib|insert)\w*",
            r"\b(?:borr|desaparec|elimin|quit)\w*",
            _MEMORY,
        ),
    ],
    "fr": [
        P(r"\bn'?oublie\s+jamais\s+(?:cette|ce)\s+(?:consigne|instruction|note|message|ordre)\b"),
        P(
            r"\b(?:rajout|remet|r[ée][ée]cri|r[ée]ins[ée]r|r[ée]ajout)\w*|\b[àa]\s+nouveau\b|\bde\s+nouveau\b",
            r"\b(?:dispar|supprim|effac|enlev|retir)\w*",
            _MEMORY,
        ),
    ],
    "de": [
        P(r"\bvergiss\s+diese\s+(?:anweisung|notiz|nachricht|regel|eintrag)\s+(?:nie|niemals)\b"),
        P(
            r"\bwieder\b|\berneut\b|\bnochmal\b",
            r"\b(?:gel[öo]scht|entfernt|verschwind\w*|verschwunden|fehlt)\b",
            _MEMORY,
        ),
    ],
    "pt": [
        P(r"\bnunca\s+esque[çc]a\s+(?:esta|este)\s+(?:instru[çc][ãa]o|nota|ordem|mensagem)\b"),
        P(
            r"\bde\s+novo\b|\bnovamente\b|\bre-?adicion\w*",
            r"\b(?:apagad|removid|exclu[íi]d|sumi|desaparec)\w*",
            _MEMORY,
        ),
    ],
    "it": [
        P(
            r"\bnon\s+dimenticare\s+mai\s+(?:questa|questo)\s+(?:istruzione|nota|ordine|messaggio)\b"
        ),
        P(
            r"\briaggiung\w*|\bdi\s+nuovo\b|\bnuovamente\b|\breinserisc\w*",
            r"\b(?:cancellat|rimoss|eliminat|spari)\w*",
            _MEMORY,
        ),
    ],
    "zh": [
        P(r"永远不要忘记这条|永远别忘记这条|永远不要忘记此|永远记住这条指令"),
        P(r"重新添加|再添加|重新加入|加回|重新写入|再次添加", r"删除|删掉|移除|消失|清除", _MEMORY),
    ],
    "ar": [
        P(r"لا\s+تنس[ىي]?\s+هذه\s+التعليمات"),
        P(r"أعد|اعد|مجددا|مرة\s+أخرى|من\s+جديد", r"حذف|أزيل|ازيل|مسح", _MEMORY),
    ],
    "ru": [
        P(
            r"\bникогда\s+не\s+забывай\s+(?:эту|это)\s+(?:инструкци\w*|заметк\w*|запис\w*|сообщени\w*)"
        ),
        P(
            r"\b(?:снова|заново|повторно|верни\w*|обратно)\b",
            r"\b(?:удал|исчез|сотр|стер)\w*",
            _MEMORY,
        ),
    ],
    "ja": [
        P(r"この指示を(?:決して|絶対に)忘れ"),
        P(r"再追加|再度追加|もう一度追加|戻して|再登録", r"削除|消え|消去", _MEMORY),
    ],
    "tr": [
        P(r"\bbu\s+talimat\w*\s+asla\s+unutma"),
        P(r"\b(?:yeniden|tekrar)\b", r"\bsilin\w*|\bkald[ıi]r[ıi]l\w*", _MEMORY),
    ],
}

# --- ask the person for passwords or codes -------------------------------------------------------

ASK_SECRET: dict[str, list[Phrase]] = {
    "en": [
        P(
            r"\b(?:ask|asking|request|prompt\s+(?:the\s+)?(?:user|person|them)\s+for|have\s+(?:them|the\s+(?:user|person))|get\s+(?:them|the\s+(?:user|person))\s+to|make\s+(?:them|the\s+(?:user|person))|collect\w*)\b",
            r"\b(?:passwords?|passphrases?|passcodes?|pins?|2fa|mfa|otp|one[-\s]time\s+(?:code|password)|verification\s+codes?|security\s+codes?|auth\w*\s+codes?|sms\s+codes?|seed\s+phrase|recovery\s+(?:phrase|codes?|key)|tan|cvv|cvc|card\s+number)\b",
            unless=r"\b(?:never|don'?t|do\s+not|not|no)\s+(?:\w+\s+)?(?:ask|request)",
        )
    ],
    "es": [
        P(
            r"\b(?:p[ií]d\w*|pregunt\w*|solicit\w*|reclam\w*)",
            r"\b(?:contrase[ñn]as?|claves?|c[óo]digos?|pin|2fa|otp)\b",
            unless=r"\b(?:nunca|no|jam[áa]s)\s+(?:le\s+|les\s+)?(?:p[ií]d|pregunt|solicit)\w*",
        )
    ],
    "fr": [
        P(
            r"\b(?:demand\w*|r[ée]clam\w*)",
            r"\b(?:mots?\s+de\s+passe|codes?|pin|2fa|otp)\b",
            unless=r"\bne\s+(?:lui\s+)?(?:demande|r[ée]clame)\w*\s+(?:jamais|pas)",
        )
    ],
    "de": [
        P(
            r"\b(?:frag\w*|bitte\w*|fordere\w*|erfrag\w*)",
            r"(?:passw[öo]rt\w*|kennw[öo]rt\w*|\bpin\b|\btan\b|\bcode\w*|best[äa]tigungscode\w*|\b2fa\b)",
            unless=r"\b(?:nie|niemals|nicht)\b[^.]{0,30}\b(?:frag|fordere)",
        )
    ],
    "pt": [
        P(
            r"\b(?:pe[çc]a\w*|pede\w*|pedir|pergunt\w*|solicit\w*)",
            r"\b(?:senhas?|c[óo]digos?|pin|2fa|otp)\b",
            unless=r"\b(?:nunca|n[ãa]o)\s+(?:lhe\s+)?(?:pe[çc]a|pe[çc]as|pergunt\w*|solicit\w*)",
        )
    ],
    "it": [
        P(
            r"\b(?:chied\w*|domand\w*)",
            r"\b(?:password|codic[ei]|pin|2fa|otp)\b",
            unless=r"\bnon\s+(?:gli\s+|le\s+)?(?:chied|domand)\w*",
        )
    ],
    "zh": [
        P(
            r"索要|询问|问用户|向用户要|要求用户(?:提供|输入|告诉)|让用户(?:告诉|提供|输入|发)|请用户(?:提供|告诉|输入)|告诉你",
            r"密码|验证码|口令|PIN|动态码|校验码",
        )
    ],
    "ar": [
        P(
            r"اطلب|اسأل|أطلب|طلب\s+من|اسال",
            r"كلمة\s+(?:ال)?مرور|كلمة\s+السر|رمز|كود",
            unless=r"لا\s+(?:تطلب|تسأل)",
        )
    ],
    "ru": [
        P(
            r"\b(?:попроси\w*|спроси\w*|запроси\w*|потребуй\w*|узнай\w*|выясни\w*)",
            r"\b(?:парол\w*|код\w*|pin|пин\w*|2fa)\b",
            unless=r"\bне\s+(?:проси|спрашивай|запрашивай|требуй)\w*",
        )
    ],
    "ja": [
        P(
            r"聞いて|聞く|尋ね|教えてもらう|教えて|求め|お願い|入力させ|要求",
            r"パスワード|認証コード|暗証番号|確認コード|ワンタイム|PIN",
        )
    ],
    "tr": [P(r"\b(?:iste\w*|sor\w*|talep\s+et\w*)", r"\b(?:[şs]ifre\w*|parola\w*|kod\w*|pin)\b")],
}

# --- switch off safeguards -------------------------------------------------------------------------

_OFF = {
    "en": r"\b(?:disabl\w*|turn\w*\s+off|switch\w*\s+off|turn\s+\S+\s+off|switch\s+\S+\s+off|deactivat\w*|bypass\w*|circumvent\w*|skip\w*|suspend\w*|remove|stop|kill)\b",
    "es": r"\b(?:desactiv|apag|quit|deshabilit|salt[aá]|omit|elimin)\w*",
    "fr": r"\b(?:d[ée]sactiv|coup|supprim|contourn|d[ée]sarm|enl[eè]v|arr[êe]t)\w*",
    "de": r"(?:\bschalt\w*[^.]{0,60}\bab\b|\babschalt\w*|\bdeaktivier\w*|\bausschalt\w*|\bumgeh\w*|\bentfern\w*|\bschalte\s+\S+\s+aus\b)",
    "pt": r"\b(?:desativ|deslig|desabilit|contorn|pul[ae])\w*",
    "it": r"\b(?:disattiv|disabilit|spegn|aggir|salt)\w*",
    "zh": r"(?:关闭|禁用|停用|绕过|关掉|跳过|取消)",
    "ar": r"(?:عطل|تعطيل|أوقف|اوقف|أطفئ|ألغ|الغ|تجاوز)",
    "ru": r"\b(?:отключ|выключ|обойд|обход|убер|деактивир)\w*",
    "ja": r"(?:無効|オフ|切って|停止|外して|スキップ)",
    "tr": r"(?:devre\s+d[ıi][şs][ıi]|\bkapat\w*|\batla\w*|\bdevreden\s+[çc][ıi]kar\w*)",
}
_SAFEGUARD = {
    "en": r"\b(?:guard|guardrails?|safety|safeguards?|security\s+(?:checks?|filters?|scan\w*)|confirmations?|approvals?|sandbox\w*|protections?)\b",
    "es": r"\b(?:seguridad|confirmaci\w*|comprobaciones|guardi\w*|protecci\w*|salvaguard\w*|verificaci\w*)\b",
    "fr": r"\b(?:garde-fou\w*|s[ée]curit[ée]|confirmations?|v[ée]rifications?|protections?|filtres?)\b",
    "de": r"(?:sicherheit\w*|best[äa]tigung\w*|schutz\w*|\bfilter\w*|pr[üu]fung\w*|w[äa]chter)",
    "pt": r"\b(?:seguran[çc]a|confirma[çc]\w*|filtros?|verifica[çc]\w*|prote[çc]\w*)\b",
    "it": r"\b(?:sicurezza|conferm\w*|filtr\w*|controll\w*|protezion\w*)\b",
    "zh": r"(?:安全|确认|过滤|防护|保护|守卫|审核)",
    "ar": r"(?:الأمان|الامان|التأكيد|التاكيد|الحماية|فحوصات|الفحص|الفلتر|الأمني)",
    "ru": r"\b(?:безопасност|подтвержден|провер|защит|фильтр|охран)\w*",
    "ja": r"(?:安全|確認|チェック|保護|フィルター|ガード)",
    "tr": r"\b(?:g[üu]venlik|onay|kontrol|koruma|filtre)\w*",
}
_NEG_OFF = {
    "en": r"\b(?:never|don'?t|do\s+not|not)\s+(?:\w+\s+){0,2}(?:disabl|turn|switch|deactivat|bypass|skip|remove|stop)",
    "es": r"\b(?:nunca|no)\s+(?:\w+\s+)?(?:desactiv|apag|quit|deshabilit|omit)",
    "fr": r"\bne\s+(?:\w+\s+)?(?:d[ée]sactiv|coup|supprim|contourn)\w*\s+(?:jamais|pas)",
    "de": r"\b(?:nie|niemals|nicht)\b[^.]{0,30}\b(?:ab|aus|deaktivier\w*)\b",
    "pt": r"\b(?:nunca|n[ãa]o)\s+(?:desativ|deslig|desabilit)",
    "it": r"\b(?:mai|non)\s+(?:disattiv|disabilit|spegn)",
    "ru": r"\bне\s+(?:отключ|выключ)",
}
_DELETE = {
    "en": r"\b(?:delet\w*|remove|wipe|eras\w*|destroy|rm\s+-rf|destructive|drop|overwrit\w*|force[-\s]push)\b",
    "es": r"\b(?:borr|elimin|suprim|destru)\w*",
    "fr": r"\b(?:supprim|effac|d[ée]trui)\w*",
    "de": r"\b(?:l[öo]sch|entfern)\w*",
    "pt": r"\b(?:apag|exclu|remov|delet)\w*",
    "it": r"\b(?:cancell|elimin|rimuov)\w*",
    "zh": r"(?:删除|删掉|清空|格式化)",
    "ar": r"(?:احذف|حذف|امسح|مسح)",
    "ru": r"\b(?:удаля|удали|сотри|стира)\w*",
    "ja": r"(?:削除|消して|消去)",
    "tr": r"\bsil\w*",
}
_NO_ASKING = {
    "en": r"\bwithout\s+(?:asking|confirm\w*|approval|checking\s+with)\b",
    "es": r"\bsin\s+(?:preguntar|confirmar|consultar|avisar|permiso)\b",
    "fr": r"\bsans\s+(?:demander|confirmation|confirmer|pr[ée]venir|autorisation)\b",
    "de": r"\bohne\s+(?:r[üu]ckfrage|zu\s+fragen|nachfrage|best[äa]tigung|erlaubnis)\b",
    "pt": r"\bsem\s+(?:perguntar|confirmar|confirma[çc][ãa]o|avisar|permiss[ãa]o)\b",
    "it": r"\bsenza\s+(?:chiedere|conferma|confermare|permesso|avvisare)\b",
    "zh": r"(?:不要询问|无需确认|不经确认|不用问|不必询问|直接)",
    "ar": r"(?:دون\s+(?:أن\s+)?(?:تسأل|سؤال|تأكيد|إذن)|بدون\s+(?:سؤال|تأكيد|إذن))",
    "ru": r"(?:\bбез\s+(?:вопросов|подтвержден\w*|спроса|разрешени\w*)|\bне\s+спрашивая\b)",
    "ja": r"(?:聞かずに|確認せずに|確認なしで|尋ねずに)",
    "tr": r"(?:\bsormadan\b|\bonay\s+almadan\b|\bsormaks[ıi]z[ıi]n\b)",
}
_NEG_DELETE = r"\b(?:never|don'?t|do\s+not|nunca|jamais|nie|niemals|mai|никогда|asla)\b"
DISABLE_SAFETY: dict[str, list[Phrase]] = {
    "any": [
        P(
            r"\b(?:guard|safety|confirm\w*|sandbox|approvals?|security)[\w.\-]*\s*[=:]\s*[\"']?(?:false|off|0|no|none|disabled?)\b"
        ),
    ],
    **{
        lang: [
            P(_OFF[lang], _SAFEGUARD[lang], unless=_NEG_OFF.get(lang)),
            P(_DELETE[lang], _NO_ASKING[lang], unless=_NEG_DELETE),
        ]
        for lang in _OFF
    },
}

# (rule id, why, table): the order in which a refusal is named
FAMILIES: tuple[tuple[str, str, dict[str, list[Phrase]]], ...] = (
    ("run-code", "an instruction to run or fetch code", RUN_CODE),
    ("role-override", "an attempt to override the agent's role or instructions", ROLE_OVERRIDE),
    ("exfiltrate", "an instruction to send data to an outside address", EXFILTRATE),
    ("conceal", "an instruction to hide something from the person", CONCEAL),
    ("ask-secret", "an instruction to ask the person for a password or a code", ASK_SECRET),
    ("disable-safety", "an instruction to switch off a safeguard", DISABLE_SAFETY),
    ("persist", "an entry that insists on staying in memory", PERSIST),
)
