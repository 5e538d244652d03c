// Every refusal the service answers with: its code and its text for people in English and Chinese,
// each a function of what it names. The HttpApi's errors (errors.ts) and the front door's answers
// are made from these; the request's language picks the form on the wire.
import type { Message } from "./errors.ts";
import type { ErrorCode } from "./error_codes.ts";

// A value a client sent, quoted in a message: a long one only by its start, so that no message
// repeats a value long enough to hold a credential (an access key is 47 characters).
const MAX_ECHO_CHARS = 20;
export const clip = (s: string) => {
  const chars = [...s];
  return chars.length > MAX_ECHO_CHARS ? `${chars.slice(0, MAX_ECHO_CHARS).join("")}…` : s;
};

const m = (code: ErrorCode, en: string, zh: string): Message => ({ code, en, zh });

export const Messages = {
  // --- 400
  requestNotValid: () => m("INVALID_REQUEST", "The request is not valid", "请求无效"),
  // One line per decoding problem (contract_middleware.ts gives each form).
  decodeFailed: (en: string, zh: string) => m("INVALID_REQUEST", en, zh),
  bodyNotRead: () => m("INVALID_REQUEST", "The request body could not be read", "无法读取请求体"),
  bodyFraming: () =>
    m(
      "INVALID_REQUEST",
      "The request body is not framed as HTTP/1.1 allows (Content-Length, or chunked transfer coding)",
      "请求体的分帧不符合 HTTP/1.1(应为 Content-Length 或分块传输编码)",
    ),
  // The client stopped sending (or went away) before its body had arrived.
  clientGone: () =>
    m(
      "INVALID_REQUEST",
      "The connection was closed before the request body had arrived",
      "请求体到达前连接已被关闭",
    ),
  hostMissing: () =>
    m(
      "INVALID_REQUEST",
      "An HTTP/1.1 request must send a Host header",
      "HTTP/1.1 请求必须包含 Host 头",
    ),
  notHttp: () =>
    m("INVALID_REQUEST", "The request is not valid HTTP/1.1", "请求不是有效的 HTTP/1.1"),
  jsonMalformed: () =>
    m("INVALID_JSON", "The body is not well-formed JSON", "请求体不是格式正确的 JSON"),
  jsonNotUtf8: () =>
    m(
      "INVALID_JSON",
      "The body is not UTF-8 text: send JSON encoded as UTF-8 (not GBK or another local encoding)",
      "请求体不是 UTF-8 文本：请以 UTF-8 编码发送 JSON（不要使用 GBK 等本地编码）",
    ),
  jsonTooDeep: (depth: number) =>
    m(
      "INVALID_JSON",
      `The JSON body is nested deeper than ${depth} levels`,
      `JSON 请求体的嵌套超过 ${depth} 层`,
    ),
  scopeNotOfStore: (scopeId: number, storeId: number) =>
    m(
      "INVALID_SCOPE",
      `scope_id ${scopeId} is not a metering scope of store ${storeId}`,
      `scope_id ${scopeId} 不是门店 ${storeId} 的计量范围`,
    ),
  startAfterEnd: (start: string, end: string) =>
    m(
      "INVALID_RANGE",
      `start ${start} is after end ${end}`,
      `开始日期 ${start} 晚于结束日期 ${end}`,
    ),
  outsideDataset: (start: string, end: string, first: string, last: string) =>
    m(
      "INVALID_RANGE",
      `the range ${start}..${end} is not within the dataset's days (${first}..${last}); ` +
        "an import accepts no other date",
      `日期范围 ${start}..${end} 不在数据集的日期（${first}..${last}）之内；导入不接受其他日期`,
    ),
  rangeTooLong: (start: string, end: string, days: number, maxDays: number) =>
    m(
      "RANGE_TOO_LONG",
      `the range ${start}..${end} has ${days} days; at most ${maxDays} are allowed`,
      `日期范围 ${start}..${end} 共 ${days} 天；最多允许 ${maxDays} 天`,
    ),
  exportTooLarge: (stores: number, days: number, values: number, max: number) =>
    m(
      "RANGE_TOO_LONG",
      `${stores} stores x ${days} days are ${values} values; an export holds at most ${max}: ` +
        "choose fewer stores (store_ids) or fewer days",
      `${stores} 家门店 × ${days} 天共 ${values} 个值；一次导出最多 ${max} 个：` +
        "请选择更少的门店（store_ids）或更少的天数",
    ),
  templateTooLarge: (stores: number, days: number, values: number, max: number) => {
    const fit = Math.max(1, Math.floor(max / Math.max(1, stores)));
    return m(
      "RANGE_TOO_LONG",
      `${stores} stores x ${days} days are ${values} values; a file may hold at most ${max}: ` +
        `choose at most ${fit} days`,
      `${stores} 家门店 × ${days} 天共 ${values} 个值；一个文件最多 ${max} 个：请选择最多 ${fit} 天`,
    );
  },
  invalidBase64: () =>
    m("INVALID_BASE64", "content_base64 is not valid base64", "content_base64 不是有效的 base64"),
  fileTooLarge: (bytes: number, max: number) =>
    m(
      "FILE_TOO_LARGE",
      `The file has ${bytes} bytes; at most ${max} (4 MiB) are accepted`,
      `文件有 ${bytes} 字节；最多接受 ${max} 字节（4 MiB）`,
    ),
  // The problems of a refused file, as imports/readers.ts formats them in each language.
  fileRefused: (en: string, zh: string) => m("INVALID_FILE", en, zh),
  bothAsOf: () =>
    m(
      "INVALID_REQUEST",
      "Send known_at or data_token, not both",
      "请只发送 known_at 或 data_token 其中之一",
    ),
  foreignToken: () =>
    m(
      "INVALID_REQUEST",
      "data_token is not a token this service gave: send an earlier answer's Data-Token header " +
        "as it is",
      "data_token 不是本服务给出的令牌：请原样发送先前响应的 Data-Token 头",
    ),
  knownAtFuture: () =>
    m(
      "INVALID_REQUEST",
      "known_at is still to come: what will be known then is not known now",
      "known_at 是将来的时刻：届时才知道的数据现在无法得知",
    ),
  tokenNamesNoCommit: () =>
    m(
      "INVALID_REQUEST",
      "The data_token names no commit of this data",
      "data_token 未指向此数据的任何一次提交",
    ),
  foreignCursor: () =>
    m(
      "INVALID_REQUEST",
      "after is not a cursor this service gave: send a page's next_cursor or head_cursor as it is",
      "after 不是本服务给出的游标：请原样发送某页的 next_cursor 或 head_cursor",
    ),
  bothCursors: () =>
    m("INVALID_REQUEST", "Send after or from_seq, not both", "请只发送 after 或 from_seq 其中之一"),
  startEndTogether: () =>
    m(
      "INVALID_REQUEST",
      "start and end go together: give both, or neither",
      "start 与 end 须同时给出，或都不给",
    ),
  // --- 401
  missingCredential: () =>
    m(
      "MISSING_CREDENTIAL",
      "Send Authorization: Bearer <ACCESS_KEY> or a session cookie",
      "请发送 Authorization: Bearer <ACCESS_KEY> 请求头或会话 Cookie",
    ),
  invalidCredential: () =>
    m(
      "INVALID_CREDENTIAL",
      "The credential is invalid, expired or revoked",
      "凭据无效、已过期或已被吊销",
    ),
  missingMetricsToken: () =>
    m(
      "MISSING_CREDENTIAL",
      "Send the metrics token as Authorization: Bearer <token>",
      "请以 Authorization: Bearer <token> 发送监控指标令牌",
    ),
  invalidMetricsToken: () =>
    m("INVALID_CREDENTIAL", "The metrics token is not valid", "监控指标令牌无效"),
  // --- 403
  readPermissionAlso: (permission: string) =>
    m(
      "PERMISSION_MISSING",
      `This key lacks the read permission, which ${permission} operations also need`,
      `此密钥缺少 read 权限，${permission} 操作同样需要它`,
    ),
  permissionMissing: (permission: string) =>
    m(
      "PERMISSION_MISSING",
      `This key lacks the ${permission} permission`,
      `此密钥缺少 ${permission} 权限`,
    ),
  roleReadOnly: () =>
    m("ROLE_READ_ONLY", "This member's role does not allow writes", "此成员的角色不允许写入"),
  storeOutside: (storeId: number) =>
    m(
      "STORE_FORBIDDEN",
      `Store ${storeId} is outside this key's stores`,
      `门店 ${storeId} 不在此密钥可访问的门店之内`,
    ),
  // For an object the caller named by its own id (a fact, a batch, an import row): the message
  // names no store, since the store behind it is not the caller's to learn.
  factOutside: () =>
    m(
      "STORE_FORBIDDEN",
      "This energy fact belongs to a store outside this key's stores",
      "此能耗记录所属的门店不在此密钥可访问的门店之内",
    ),
  batchOutside: () =>
    m(
      "STORE_FORBIDDEN",
      "This batch holds days of a store outside this key's stores",
      "此批次包含不在此密钥可访问门店之内的门店数据",
    ),
  importRowOutside: () =>
    m(
      "STORE_FORBIDDEN",
      "This import row belongs to a store outside this key's stores",
      "此导入行所属的门店不在此密钥可访问的门店之内",
    ),
  fromSeqAllStores: () =>
    m(
      "STORE_FORBIDDEN",
      "from_seq is for keys of every store: start without after, or from head_cursor",
      "from_seq 仅供可访问全部门店的密钥使用：请不带 after 开始，或从 head_cursor 开始",
    ),
  originRequiredForSession: () =>
    m(
      "ORIGIN_REQUIRED",
      "A write through a session cookie needs a same-origin Origin header",
      "通过会话 Cookie 写入需要同源的 Origin 请求头",
    ),
  originRequired: () =>
    m(
      "ORIGIN_REQUIRED",
      "A valid same-origin Origin header is required",
      "需要有效的同源 Origin 请求头",
    ),
  originUncheckable: () =>
    m(
      "ORIGIN_REQUIRED",
      "This address is not the one the service was configured for: a same-origin Origin header " +
        "cannot be checked. Set PUBLIC_ORIGIN to the address browsers use",
      "此地址不是服务配置的地址：无法检查同源 Origin 请求头。请将 PUBLIC_ORIGIN 设为浏览器使用的地址",
    ),
  profileNotEditable: (storeId: number) =>
    m(
      "PROFILE_NOT_EDITABLE",
      `The profile of store ${storeId} is not editable`,
      `门店 ${storeId} 的资料不可编辑`,
    ),
  // --- 404
  noEndpoint: () => m("NOT_FOUND", "No endpoint at this path", "此路径没有接口"),
  idBeyondAll: () =>
    m(
      "NOT_FOUND",
      "Nothing has this id: ids go up to 2147483647",
      "没有此编号的对象：编号最大为 2147483647",
    ),
  storeMissing: (storeId: number | string) =>
    m("NOT_FOUND", `Store ${storeId} does not exist`, `门店 ${storeId} 不存在`),
  factMissing: (energyId: number) =>
    m("NOT_FOUND", `Energy fact ${energyId} does not exist`, `能耗记录 ${energyId} 不存在`),
  batchMissing: (batchId: number) =>
    m("NOT_FOUND", `Import batch ${batchId} does not exist`, `导入批次 ${batchId} 不存在`),
  importRowMissing: (rowId: number) =>
    m("NOT_FOUND", `Import row ${rowId} does not exist`, `导入行 ${rowId} 不存在`),
  noStoreToExport: () =>
    m("NOT_FOUND", "This key sees no store to export", "此密钥没有可导出的门店"),
  noConsoleAsset: () => m("NOT_FOUND", "No such console asset", "没有此控制台资源"),
  // --- 405, 408, 413, 415, 431
  methodNotAllowed: (allow: string) =>
    m("METHOD_NOT_ALLOWED", `This path answers ${allow}`, `此路径只接受 ${allow} 方法`),
  bodyLate: (ms: number) =>
    m(
      "REQUEST_TIMEOUT",
      `The request body did not arrive within ${ms} ms`,
      `请求体未在 ${ms} 毫秒内到达`,
    ),
  requestLate: () =>
    m("REQUEST_TIMEOUT", "The request did not arrive in time", "请求未在限定时间内到达"),
  bodyTooLarge: (maxBytes: number) =>
    m(
      "PAYLOAD_TOO_LARGE",
      `The request body is larger than ${maxBytes} bytes`,
      `请求体大于 ${maxBytes} 字节`,
    ),
  noBodyTaken: () =>
    m("PAYLOAD_TOO_LARGE", "This endpoint takes no request body", "此接口不接受请求体"),
  sendJson: () =>
    m(
      "UNSUPPORTED_MEDIA_TYPE",
      "Send the body as application/json",
      "请以 application/json 格式发送请求体",
    ),
  noContentCoding: () =>
    m(
      "UNSUPPORTED_MEDIA_TYPE",
      "Send the body without a Content-Encoding: the service decodes none",
      "请求体请勿使用 Content-Encoding 编码：服务不解码任何内容编码",
    ),
  sendJsonUtf8: () =>
    m(
      "UNSUPPORTED_MEDIA_TYPE",
      "Send the body as application/json (UTF-8)",
      "请以 application/json（UTF-8）格式发送请求体",
    ),
  headersTooLarge: (maxBytes: number) =>
    m(
      "HEADERS_TOO_LARGE",
      `The request's headers are larger than ${maxBytes} bytes`,
      `请求头大于 ${maxBytes} 字节`,
    ),
  // --- 409
  staleVersion: (current: number, expected: number) =>
    m(
      "STALE_VERSION",
      `The profile is at version ${current}, not ${expected}: read it again and re-check before ` +
        "retrying",
      `门店资料当前为第 ${current} 版，不是第 ${expected} 版：请重新读取并核对后再试`,
    ),
  nameTaken: (name: string) =>
    m(
      "NAME_TAKEN",
      `Another store of this brand is already named "${clip(name)}"`,
      `该品牌已有另一家门店名为“${clip(name)}”`,
    ),
  keyReused: () =>
    m(
      "IDEMPOTENCY_KEY_REUSED",
      "This Idempotency-Key was used for a different request; use a new key for a new operation",
      "此 Idempotency-Key 已用于另一个请求；新的操作请使用新的键",
    ),
  sealedBatch: (batchNo: string) =>
    m(
      "NOT_COMMITTABLE",
      `Batch ${batchNo} is a sealed platform batch and cannot be committed`,
      `批次 ${batchNo} 是封存的平台批次，不能提交`,
    ),
  sealedBatchNoReview: (batchNo: string) =>
    m(
      "NOT_COMMITTABLE",
      `Batch ${batchNo} is a sealed platform batch: only uploads have a review`,
      `批次 ${batchNo} 是封存的平台批次：只有上传的批次可以审阅`,
    ),
  sealedBatchNoDiscard: (batchNo: string) =>
    m(
      "NOT_COMMITTABLE",
      `Batch ${batchNo} is a sealed platform batch and cannot be discarded`,
      `批次 ${batchNo} 是封存的平台批次，不能丢弃`,
    ),
  alreadyCommitted: (batchNo: string) =>
    m("ALREADY_COMMITTED", `Batch ${batchNo} is already committed`, `批次 ${batchNo} 已经提交`),
  batchDiscarded: (batchNo: string) =>
    m(
      "BATCH_EXPIRED",
      `Batch ${batchNo} was discarded; preview the file again`,
      `批次 ${batchNo} 已被丢弃；请重新预览文件`,
    ),
  batchExpired: (batchNo: string, hours: number) =>
    m(
      "BATCH_EXPIRED",
      `Batch ${batchNo} expired ${hours} hours after its preview; preview the file again`,
      `批次 ${batchNo} 在预览 ${hours} 小时后已过期；请重新预览文件`,
    ),
  daysChanged: (days: number, first: string | null) =>
    m(
      "STALE_PREVIEW",
      `${days} day(s) changed since the preview (first: ${first}); preview the file again`,
      `自预览以来有 ${days} 天的数据已变更（最早：${first}）；请重新预览文件`,
    ),
  daysCreated: (days: number) =>
    m(
      "STALE_PREVIEW",
      `${days} day(s) were created since the preview; preview the file again`,
      `自预览以来新增了 ${days} 天的数据；请重新预览文件`,
    ),
  concurrentChange: () =>
    m(
      "STALE_PREVIEW",
      "A concurrent change touched the same days; preview the file again",
      "同时进行的另一项变更涉及相同的日期；请重新预览文件",
    ),
  dayStateNotKept: () =>
    m(
      "HISTORY_NOT_KEPT",
      "The state of a day at that instant was not kept (history starts later)",
      "未保留该时刻某天的状态（历史记录从更晚的时间开始）",
    ),
  nothingCommittedThen: () =>
    m("HISTORY_NOT_KEPT", "No data was committed at that point", "该时刻之前没有提交过数据"),
  historyKeptFrom: (keptFrom: string) =>
    m(
      "HISTORY_NOT_KEPT",
      `This database keeps the history of its data from ${keptFrom}; ask for that instant or a ` +
        "later one",
      `此数据库保留的数据历史始于 ${keptFrom}；请查询该时刻或更晚的时刻`,
    ),
  tokenReplaced: () =>
    m(
      "DATA_REPLACED",
      "The data_token names data that a later snapshot load replaced",
      "data_token 指向的数据已被之后加载的快照替换",
    ),
  cursorReplaced: () =>
    m(
      "DATA_REPLACED",
      "The cursor names data that a later snapshot load replaced",
      "游标指向的数据已被之后加载的快照替换",
    ),
  // --- 500
  internal: (requestId: string) =>
    m(
      "INTERNAL",
      `The operation failed (request ${requestId})`,
      `操作失败（请求 ${requestId}）`,
    ),
  // --- 503
  databaseLost: () =>
    m(
      "NOT_READY",
      "The embedded database stopped and cannot be reached again: start the service again",
      "内置数据库已停止且无法再连接：请重新启动服务",
    ),
  databaseUnreachable: () => m("NOT_READY", "The database is not reachable", "无法连接数据库"),
  noSnapshot: () => m("NOT_READY", "No snapshot is loaded", "尚未加载快照"),
  noData: () => m("NOT_READY", "No data is loaded", "尚未加载数据"),
  noWrites: () =>
    m(
      "NOT_READY",
      "The database accepts no writes now; retry later",
      "数据库暂不接受写入；请稍后重试",
    ),
  migrationsPending: (n: number) =>
    m("NOT_READY", `${n} migration(s) not applied`, `${n} 个数据库迁移尚未执行`),
  routinesPending: (n: number) =>
    m("NOT_READY", `${n} routine(s) not installed`, `${n} 个数据库函数尚未安装`),
  interrupted: () => m("NOT_READY", "The request was interrupted", "请求被中断"),
  credentialUncheckable: () =>
    m("NOT_READY", "The credential could not be checked", "无法检查凭据"),
  consoleNotBuilt: () =>
    m(
      "NOT_READY",
      "The console is not built: run deno task console:build",
      "控制台尚未构建：请运行 deno task console:build",
    ),
  connectionsBusy: () =>
    m(
      "BUSY",
      "Every database connection is in use by other requests; try again shortly",
      "所有数据库连接都在处理其他请求；请稍后重试",
    ),
  dataBusy: () =>
    m(
      "BUSY",
      "The data is busy (a lock or a long statement held it); try again shortly",
      "数据正忙（被锁或长时间运行的语句占用）；请稍后重试",
    ),
  bodiesBusy: () =>
    m(
      "BUSY",
      "The service is receiving as many request bodies as it takes at once; try again shortly",
      "服务同时接收的请求体已达上限；请稍后重试",
    ),
  heavyBusy: () =>
    m(
      "BUSY",
      "As many imports, exports and portfolio reads as the service runs at once are running; try again shortly",
      "服务同时运行的导入、导出和门店总览读取已达上限；请稍后重试",
    ),
  requestTooLong: (ms: number) =>
    m(
      "TIMEOUT",
      `The request took longer than ${ms} ms; try again later`,
      `请求耗时超过 ${ms} 毫秒；请稍后重试`,
    ),
  writeTooLong: (ms: number) =>
    m(
      "TIMEOUT",
      `The request took longer than ${ms} ms and was answered before its outcome was known: it ` +
        "may still have been applied. Send it again with the same Idempotency-Key to learn its " +
        "outcome (it is applied once), or read the data again before changing it",
      `请求耗时超过 ${ms} 毫秒，在结果确定之前已作答：它可能仍已生效。请使用相同的 Idempotency-Key 重新发送以获知结果` +
        "（只会生效一次），或先重新读取数据再修改",
    ),
  qualityCurrentOnly: () =>
    m(
      "INVALID_REQUEST",
      "The quality check reads the current data only: known_at and data_token are not taken",
      "数据质量检查只读取当前数据：不接受 known_at 和 data_token",
    ),
  exportDataChanged: () =>
    m(
      "BUSY",
      "the data changed while the export was read (an import was committed); export again",
      "导出读取期间数据已变更（有导入已提交）；请重新导出",
    ),
  exportTooLong: (ms: number) =>
    m(
      "TIMEOUT",
      `the export took longer than its limit of ${ms} ms`,
      `导出耗时超过其 ${ms} 毫秒的限制`,
    ),
} as const;
