"""A small stand-in for paper 002's multilingual corpus, in its release's layout: ``corpus.json``
(a JSON array of ``{docid, text, lang}``) and ``train.csv`` / ``dev.csv`` (``query_id``,
``query``, ``positive_docs``, ``negative_docs`` in train only, ``lang``).

Seven languages (the paper's EN, FR, DE, ES, IT, AR, KO), four themes each (health, sport,
rivers, computers), two documents per theme plus the language's other themes as distractors.
Each development query names its theme's words and has the theme's first document as its
positive; a training query has the second. One English training query's positive is a French
document, which the reader warns about. Real words of each language, so that each language's
analyzer has something to lemmatize; nothing here is real data.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

LANGUAGES = ("en", "fr", "de", "es", "it", "ar", "ko")
# language -> themes -> (first document, second document, development query, training query)
TEXTS: dict[str, list[tuple[str, str, str, str]]] = {
    "en": [
        (
            "Doctors treat heart disease and high blood pressure with medicines.",
            "Cardiologists studied the arteries of older patients.",
            "heart disease blood pressure",
            "arteries of patients",
        ),
        (
            "The football team won the championship final last night.",
            "Players were training every morning at the stadium.",
            "football championship final",
            "players training stadium",
        ),
        (
            "The river flows through the mountains down to the sea.",
            "Floods covered the valley after heavy rains.",
            "river mountains sea",
            "floods valley rains",
        ),
        (
            "Software engineers write computer programs for banks.",
            "The new processor makes laptops much faster.",
            "software engineers computer programs",
            "processor laptops faster",
        ),
    ],
    "fr": [
        (
            "Les médecins soignent les maladies du cœur et la tension artérielle.",
            "Les cardiologues ont étudié les artères des patients âgés.",
            "maladies du cœur tension",
            "artères des patients",
        ),
        (
            "L'équipe de football a gagné la finale du championnat.",
            "Les joueurs s'entraînaient chaque matin au stade.",
            "finale du championnat de football",
            "joueurs entraînement stade",
        ),
        (
            "Le fleuve traverse les montagnes jusqu'à la mer.",
            "Les inondations ont couvert la vallée après les pluies.",
            "fleuve montagnes mer",
            "inondations vallée pluies",
        ),
        (
            "Les ingénieurs écrivent des logiciels pour les banques.",
            "Le nouveau processeur rend les ordinateurs portables plus rapides.",
            "ingénieurs logiciels banques",
            "processeur ordinateurs rapides",
        ),
    ],
    "de": [
        (
            "Ärzte behandeln Herzkrankheiten und hohen Blutdruck mit Medikamenten.",
            "Kardiologen untersuchten die Arterien älterer Patienten.",
            "Herzkrankheiten Blutdruck",
            "Arterien der Patienten",
        ),
        (
            "Die Fußballmannschaft gewann gestern das Finale der Meisterschaft.",
            "Die Spieler trainierten jeden Morgen im Stadion.",
            "Fußball Finale Meisterschaft",
            "Spieler trainieren Stadion",
        ),
        (
            "Der Fluss fließt durch die Berge bis zum Meer.",
            "Überschwemmungen bedeckten das Tal nach starkem Regen.",
            "Fluss Berge Meer",
            "Überschwemmungen Tal Regen",
        ),
        (
            "Ingenieure schreiben Programme für die Banken.",
            "Der neue Prozessor macht die Laptops schneller.",
            "Ingenieure Programme Banken",
            "Prozessor Laptops schneller",
        ),
    ],
    "es": [
        (
            "Los médicos tratan las enfermedades del corazón y la presión arterial.",
            "Los cardiólogos estudiaron las arterias de pacientes mayores.",
            "enfermedades del corazón presión",
            "arterias de pacientes",
        ),
        (
            "El equipo de fútbol ganó la final del campeonato.",
            "Los jugadores entrenaban cada mañana en el estadio.",
            "final del campeonato de fútbol",
            "jugadores entrenaban estadio",
        ),
        (
            "El río atraviesa las montañas hasta el mar.",
            "Las inundaciones cubrieron el valle después de las lluvias.",
            "río montañas mar",
            "inundaciones valle lluvias",
        ),
        (
            "Los ingenieros escriben programas para los bancos.",
            "El nuevo procesador hace los portátiles más rápidos.",
            "ingenieros programas bancos",
            "procesador portátiles rápidos",
        ),
    ],
    "it": [
        (
            "I medici curano le malattie del cuore e la pressione sanguigna.",
            "I cardiologi hanno studiato le arterie dei pazienti anziani.",
            "malattie del cuore pressione",
            "arterie dei pazienti",
        ),
        (
            "La squadra di calcio ha vinto la finale del campionato.",
            "I giocatori si allenavano ogni mattina allo stadio.",
            "finale del campionato di calcio",
            "giocatori allenavano stadio",
        ),
        (
            "Il fiume attraversa le montagne fino al mare.",
            "Le alluvioni hanno coperto la valle dopo le piogge.",
            "fiume montagne mare",
            "alluvioni valle piogge",
        ),
        (
            "Gli ingegneri scrivono programmi per le banche.",
            "Il nuovo processore rende i portatili più veloci.",
            "ingegneri programmi banche",
            "processore portatili veloci",
        ),
    ],
    "ar": [
        (
            "يعالج الأطباء أمراض القلب وضغط الدم بالأدوية.",
            "درس أطباء القلب شرايين المرضى المسنين.",
            "أمراض القلب ضغط الدم",
            "شرايين المرضى",
        ),
        (
            "فاز فريق كرة القدم بنهائي البطولة.",
            "كان اللاعبون يتدربون كل صباح في الملعب.",
            "نهائي البطولة كرة القدم",
            "اللاعبون الملعب",
        ),
        (
            "يجري النهر عبر الجبال حتى البحر.",
            "غطت الفيضانات الوادي بعد الأمطار الغزيرة.",
            "النهر الجبال البحر",
            "الفيضانات الوادي الأمطار",
        ),
        (
            "يكتب المهندسون البرامج للمصارف.",
            "المعالج الجديد يجعل الحواسيب المحمولة أسرع.",
            "المهندسون البرامج المصارف",
            "المعالج الحواسيب أسرع",
        ),
    ],
    "ko": [
        (
            "의사들은 심장 질환과 고혈압을 약으로 치료한다.",
            "심장 전문의들은 노인 환자의 동맥을 연구했다.",
            "심장 질환 고혈압",
            "환자의 동맥",
        ),
        (
            "축구 팀이 결승전에서 우승했다.",
            "선수들은 매일 아침 경기장에서 훈련했다.",
            "축구 결승전 우승",
            "선수들 경기장 훈련",
        ),
        (
            "강은 산을 지나 바다로 흐른다.",
            "홍수가 폭우 후에 계곡을 덮었다.",
            "강 산 바다",
            "홍수 계곡 폭우",
        ),
        (
            "엔지니어들은 은행을 위한 프로그램을 작성한다.",
            "새 프로세서는 노트북을 더 빠르게 만든다.",
            "엔지니어 프로그램 은행",
            "프로세서 노트북 빠르게",
        ),
    ],
}
CROSSED_QUERY = "q-train-en-0"
"""The training query whose positive is in another language (French)."""


def doc_id(language: str, theme: int, which: int) -> str:
    return f"doc-{language}-{theme}{which}"


def corpus() -> list[dict]:
    return [
        {"docid": doc_id(language, theme, which), "text": texts[which], "lang": language}
        for language in LANGUAGES
        for theme, texts in enumerate(TEXTS[language])
        for which in (0, 1)
    ]


def queries(split: str) -> list[dict]:
    """A split's rows: query id, text, positive document id, language."""
    rows = []
    for language in LANGUAGES:
        for theme, texts in enumerate(TEXTS[language]):
            row = {"query_id": f"q-{split}-{language}-{theme}", "query": texts[2]}
            if split == "dev":
                row |= {"positive_docs": doc_id(language, theme, 0), "lang": language}
                rows.append(row)
                continue
            crossed = row["query_id"] == CROSSED_QUERY
            row["query"] = texts[3]
            row["positive_docs"] = doc_id("fr" if crossed else language, theme, 1)
            row["negative_docs"] = str([doc_id(language, (theme + 1) % 4, 0)])
            rows.append(row | {"lang": language})
    return rows


def corpus_json() -> bytes:
    return json.dumps(corpus(), ensure_ascii=False, indent=1).encode()


def _csv(rows: list[dict]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode()


FILES: dict[str, Callable[[], bytes]] = {
    "multilingual-dis2024/corpus.json": corpus_json,
    "multilingual-dis2024/train.csv": lambda: _csv(queries("train")),
    "multilingual-dis2024/dev.csv": lambda: _csv(queries("dev")),
}
