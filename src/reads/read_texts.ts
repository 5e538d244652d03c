// The texts for people that the read answers carry (metric labels, period labels, the fixed notes
// of the metrics, targets, months and portfolio reads) in Chinese, and the step that gives an
// answer in the request's language before it is encoded. Codes, enums and data stay as they are.
import { type JsonPart, JsonText } from "../domain/answers.ts";
import { type Language, type Text, text as t } from "../domain/language.ts";
import { METRICS, NOTES as METRICS_NOTES } from "../metrics/engine.ts";
import { PORTFOLIO_NOTES } from "../portfolio/portfolio_service.ts";

const METRIC_ZH: Record<string, string> = {
  actual: "实际能耗（kWh）",
  eba: "基准能耗 EBA（kWh）",
  aes: "节能量 AES（kWh）",
  aer: "节能率 AER（%）",
  tes: "旧版目标 TES（kWh/日）",
  tes_180: "目标 TES-180（kWh/日）",
  tes_210: "目标 TES-210（kWh/日）",
  tev: "目标值 TEV（kWh/日）",
};

// A metric's label, by its code (the English is the engine's).
export const METRIC_LABELS: ReadonlyMap<string, Text> = new Map(
  METRICS.map(({ metric, label }) => [metric, t(label, METRIC_ZH[metric] ?? label)] as const),
);

export const PERIOD_LABELS: ReadonlyMap<string, Text> = new Map([
  ["day", t("Day", "当日")],
  ["week", t("Last 7 days", "最近 7 天")],
  ["month", t("Last 30 days", "最近 30 天")],
  ["year", t("Year to date", "本年至今")],
]);

const METRICS_NOTES_ZH = [
  "合计只包含有值的日期：部分合计不是整段期间的合计。请将 requested_days 与 actual_days、eba_days、matched_days 一并阅读。",
  "临时日（provisional = 1，当日滚动值）计入数值合计，但不产生达标或未达标结论。",
  "EBA 是仅用于夏季（6 月 1 日至 9 月 30 日）的本地试行基准：取此前最近一个至少有 15 个已结算 BASELINE 阶段日期的年份中同一日历月的平均值。其他日期没有 EBA。",
  "AES、AER 和达标标志只在 TRIAL 或 OPERATING 阶段、且同时有实际能耗和 EBA 的日期上计算；汇总的达标标志只使用已结算的日期。",
  "TES-180 与 TES-210 是相互独立的目标（设备费用 / 180 或 / 210，电价按每 kWh 1 计），各自只与自身的值比较；两者都不由旧版 tes_kwh 推导。",
  "为负的节能量（实际高于 EBA）显示为 null，原因为 NEGATIVE_SAVINGS；达标标志仍使用带符号的值，因此该日 eba_pass 为未达标。",
  "早于某日 180 天以上观测到的 TEV 在该日已过期（TEV_STALE），不产生 TEV 达标或未达标结论。",
  "availability[].reasons 列出该指标在此范围内每个空值或空达标标志的原因；请与数值一并阅读。",
];

const TARGETS_NOTE = t(
  "One row per day. NO_EFFECTIVE_TARGET days carry null values and are never zero-filled. " +
    "TES-180 and TES-210 are device cost / 180 (or 210) / electricity price 1, each on its own; " +
    "tes_kwh is the legacy compatibility value. TEV is the latest valid positive legacy value with " +
    "the date it was observed. Sealed candidates in the store reference are not effective targets. " +
    "No pass or fail is computed here: see the metrics endpoint.",
  "每天一行。NO_EFFECTIVE_TARGET 的日期值为 null，绝不补零。TES-180 与 TES-210 为设备费用 / 180（或 210）/ " +
    "电价 1，各自独立；tes_kwh 是旧版兼容值。TEV 是最近一个有效的正的旧版值，并附其观测日期。门店参考资料中的" +
    "封存候选值不是生效的目标。此处不计算达标与否：请查看指标接口。",
);

const MONTHS_NOTES = [
  t(
    "Each month's summary is the summary the metrics read gives for that month's days within the " +
      "range: exact sums rounded once; savings (aes_kwh) count only matched days (actual and EBA " +
      "present, stage TRIAL or OPERATING) and are null when negative; pass flags are decided on the " +
      "settled days alone.",
    "每月的汇总即指标接口对该月在范围内各日给出的汇总：精确求和后只舍入一次；节能量（aes_kwh）只计匹配日" +
      "（有实际能耗和 EBA，阶段为 TRIAL 或 OPERATING），为负时为 null；达标与否只按已结算的日期判定。",
  ),
  t(
    "year_earlier holds the same days one year earlier (29 February becomes 28 February; a span " +
      "ending on a month's last day ends on that month's last day, so February meets all of " +
      "February), summed by the same rules, with the stages, targets and baseline of that time.",
    "year_earlier 为一年前的相同日期（2 月 29 日对应 2 月 28 日；止于月末的区间对应一年前该月的月末，" +
      "因此 2 月与一年前的整个 2 月相比），" +
      "按相同规则求和，使用当时的阶段、目标和基准。",
  ),
];

const PORTFOLIO_NOTES_ZH = [
  "每家门店的汇总即该门店在相同范围内指标接口（GET /api/v1/stores/{store_id}/metrics）给出的汇总，由同一引擎计算。",
  "汇总行（按品牌、按城市、总计）是其所有门店日期合在一起的指标汇总：requested_days 等天数为门店日数；kWh 值为" +
  "精确求和后只舍入一次；aer_percent 是节能量之和除以匹配基准之和，而不是各门店节能率的平均；每个达标标志比较" +
  "已结算匹配日的合计值，与单家门店对其自身日期的比较方式相同。",
  "没有任何日期参与的合计为 null，绝不是 0.0000。",
  "data_quality 是各日与设备上报的交叉核对，在汇总行中为各计数之和；它从不改变任何值。",
];

// Every fixed note, by its English text.
const NOTE_TEXTS: ReadonlyMap<string, Text> = new Map(
  [
    ...METRICS_NOTES.map((en, i) => t(en, METRICS_NOTES_ZH[i] ?? en)),
    TARGETS_NOTE,
    ...MONTHS_NOTES,
    ...PORTFOLIO_NOTES.map((en, i) => t(en, PORTFOLIO_NOTES_ZH[i] ?? en)),
  ].map((note) => [note.en, note]),
);

// The source labels of days and revisions (energy/day_sql.ts sourceLabelSql, and the labels the
// snapshot load and the import commit store with a revision), and the platform's actor label.
const SOURCE_LABELS: ReadonlyMap<string, Text> = new Map(
  [
    t("Voided day", "作废日"),
    t("No data", "无数据"),
    t("Cleaned value", "清洗值"),
    t("Cleaned value (manual upload)", "清洗值（手动上传）"),
    t("Sealed legacy value", "封存的旧版值"),
    t("Sealed legacy snapshot", "封存的旧版快照"),
    t("Cleaned snapshot", "清洗快照"),
    t("Manual upload", "手动上传"),
  ].map((label) => [label.en, label]),
);
const PLATFORM_ACTOR = t("Platform snapshot load", "平台快照加载");

// A metrics day's baseline reference (metrics/engine.ts).
const BASELINE_REFERENCE = /^BASELINE (\d{4}-\d{2}) mean of (\d+) days$/;
const baselineReferenceIn = (reference: unknown) => {
  const m = typeof reference === "string" ? BASELINE_REFERENCE.exec(reference) : null;
  return m === null ? reference : `BASELINE 阶段 ${m[1]} 共 ${m[2]} 天的平均值`;
};

// Every text this module gives in Chinese (for the tests).
export const readTexts = (): ReadonlyArray<Text> => [
  ...METRIC_LABELS.values(),
  ...PERIOD_LABELS.values(),
  ...NOTE_TEXTS.values(),
  ...SOURCE_LABELS.values(),
  PLATFORM_ACTOR,
];

export const sourceLabelIn = (label: string, language: Language): string =>
  language === "en" ? label : SOURCE_LABELS.get(label)?.zh ?? label;

// Parts of a JSON answer encoded by the database (energy days): their source labels in a language
// (a part in bytes becomes text only for a language other than the stored one).
const SOURCE_LABEL_JSON = /"source_label" : "([^"]*)"/g;
const utf8 = new TextDecoder();
export const localizeDayParts = (
  parts: ReadonlyArray<JsonPart>,
  language: Language,
): ReadonlyArray<JsonPart> =>
  language === "en" ? parts : parts.map((part) =>
    JsonText(
      (typeof part === "string" ? part : utf8.decode(part)).replace(
        SOURCE_LABEL_JSON,
        (all, label: string) => {
          const zh = SOURCE_LABELS.get(label)?.zh;
          return zh === undefined ? all : `"source_label" : "${zh}"`;
        },
      ),
    )
  );

// A day's versions or a fact's revisions in a language: source labels, and the platform's name.
export const localizeRevisions = <
  A extends {
    readonly source_label: string | null;
    readonly actor?: { readonly label: string | null };
  },
>(rows: ReadonlyArray<A>, language: Language): ReadonlyArray<A> =>
  language === "en" ? rows : rows.map((r): A => ({
    ...r,
    source_label: r.source_label === null ? null : sourceLabelIn(r.source_label, language),
    ...(r.actor === undefined ? {} : {
      actor: {
        ...r.actor,
        label: r.actor.label === PLATFORM_ACTOR.en ? PLATFORM_ACTOR.zh : r.actor.label,
      },
    }),
  }));

const noteIn = (note: unknown) =>
  typeof note === "string" ? NOTE_TEXTS.get(note)?.zh ?? note : note;

type Json = Record<string, unknown>;

/**
 * An answer of the metrics, targets, periods, months or portfolio reads in a language: English as
 * it is; Chinese with its labels (found by metric or period key), fixed notes and baseline
 * references given in Chinese. The data quality notes are made in the request's language.
 */
export const localizeAnswer = <A>(value: A, language: Language): A => {
  if (language === "en" || value === null || typeof value !== "object") return value;
  const answer = { ...(value as Json) };
  if (Array.isArray(answer.availability)) {
    answer.availability = (answer.availability as Array<Json>).map((a) => ({
      ...a,
      label: METRIC_LABELS.get(String(a.metric))?.zh ?? a.label,
    }));
  }
  if (Array.isArray(answer.periods)) {
    answer.periods = (answer.periods as Array<Json>).map((p) => ({
      ...p,
      label: PERIOD_LABELS.get(String(p.key))?.zh ?? p.label,
    }));
  }
  if (Array.isArray(answer.days)) {
    answer.days = (answer.days as Array<Json>).map((d) =>
      typeof d.baseline_reference === "string"
        ? { ...d, baseline_reference: baselineReferenceIn(d.baseline_reference) }
        : d
    );
  }
  if (Array.isArray(answer.notes)) answer.notes = (answer.notes as Array<unknown>).map(noteIn);
  if (typeof answer.note === "string") answer.note = noteIn(answer.note);
  return answer as A;
};
