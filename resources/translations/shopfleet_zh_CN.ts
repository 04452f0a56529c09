<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="zh_CN">
<context>
    <name />
    <message>
        <source>%1: %2</source>
        <translation>%1：%2</translation>
    </message>
    <message>
        <source>%1 was refused: %2</source>
        <translation>%1 未执行：%2</translation>
    </message>
    <message>
        <source>Check the field %1.</source>
        <translation>请检查字段 %1。</translation>
    </message>
    <message>
        <source>%1 failed because of a bug in ShopFleet.</source>
        <translation>%1 失败：ShopFleet 程序错误。</translation>
    </message>
    <message>
        <source>the engine is not running</source>
        <translation>引擎未运行</translation>
    </message>
    <message>
        <source>hard-aged</source>
        <translation>硬老化</translation>
    </message>
    <message>
        <source>ID</source>
        <translation>编号</translation>
    </message>
    <message>
        <source>Score</source>
        <translation>分数</translation>
    </message>
    <message>
        <source>Type</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Shop</source>
        <translation>店铺</translation>
    </message>
    <message>
        <source>Platform</source>
        <translation>平台</translation>
    </message>
    <message>
        <source>Waited</source>
        <translation>已等待</translation>
    </message>
    <message>
        <source>Deadline</source>
        <translation>截止时间</translation>
    </message>
    <message>
        <source>Attempts</source>
        <translation>尝试次数</translation>
    </message>
    <message>
        <source>Hard-aged</source>
        <translation>硬老化</translation>
    </message>
    <message>
        <source>Reason</source>
        <translation>原因</translation>
    </message>
    <message>
        <source>Since</source>
        <translation>持续</translation>
    </message>
    <message>
        <source>Error</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Finished</source>
        <translation>结束时间</translation>
    </message>
    <message>
        <source>Took</source>
        <translation>耗时</translation>
    </message>
    <message>
        <source>Step</source>
        <translation>步骤</translation>
    </message>
    <message>
        <source>%1 of %2</source>
        <translation>第 %1 步，共 %2 步</translation>
    </message>
    <message>
        <source>starting</source>
        <translation>启动中</translation>
    </message>
    <message>
        <source>Elapsed</source>
        <translation>已用时</translation>
    </message>
    <message>
        <source>Browser</source>
        <translation>浏览器</translation>
    </message>
    <message>
        <source>Preemptible</source>
        <translation>可抢占</translation>
    </message>
    <message>
        <source>yes</source>
        <translation>是</translation>
    </message>
    <message>
        <source>no</source>
        <translation>否</translation>
    </message>
    <message>
        <source>Shop paused</source>
        <translation>店铺已暂停</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>Queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Details</source>
        <translation>详情</translation>
    </message>
    <message>
        <source>Joins the queue</source>
        <translation>入队时间</translation>
    </message>
    <message>
        <source>Worker</source>
        <translation>工作节点</translation>
    </message>
    <message>
        <source>this console</source>
        <translation>本控制台</translation>
    </message>
    <message>
        <source>another worker on this computer</source>
        <translation>本机的另一个工作节点</translation>
    </message>
    <message>
        <source>elsewhere</source>
        <translation>其他节点</translation>
    </message>
    <message>
        <source>%1 ago</source>
        <translation>%1前</translation>
    </message>
    <message>
        <source>Host</source>
        <translation>主机</translation>
    </message>
    <message>
        <source>Pool size</source>
        <translation>浏览器池大小</translation>
    </message>
    <message>
        <source>Last heartbeat</source>
        <translation>最近心跳</translation>
    </message>
    <message>
        <source>Started</source>
        <translation>启动时间</translation>
    </message>
    <message>
        <source>Tasks done</source>
        <translation>已完成任务</translation>
    </message>
    <message>
        <source>Browsers</source>
        <translation>浏览器</translation>
    </message>
    <message>
        <source>Site</source>
        <translation>站点</translation>
    </message>
    <message>
        <source>Tags</source>
        <translation>标签</translation>
    </message>
    <message>
        <source>Login name</source>
        <translation>登录名</translation>
    </message>
    <message>
        <source>Network</source>
        <translation>网络</translation>
    </message>
    <message>
        <source>Takeover</source>
        <translation>接管</translation>
    </message>
    <message>
        <source>Site paused</source>
        <translation>站点已暂停</translation>
    </message>
    <message>
        <source>Waiting for a person</source>
        <translation>等待人工</translation>
    </message>
    <message>
        <source>Rate limit</source>
        <translation>限速</translation>
    </message>
    <message>
        <source>Burst</source>
        <translation>突发容量</translation>
    </message>
    <message>
        <source>Tokens</source>
        <translation>令牌</translation>
    </message>
    <message>
        <source>Waiting</source>
        <translation>等待中</translation>
    </message>
    <message>
        <source>Held</source>
        <translation>暂停中</translation>
    </message>
    <message>
        <source>Issued</source>
        <translation>已发放</translation>
    </message>
    <message>
        <source>Breaker</source>
        <translation>熔断器</translation>
    </message>
    <message>
        <source>Recent failures</source>
        <translation>近期失败</translation>
    </message>
    <message>
        <source>Trips</source>
        <translation>熔断次数</translation>
    </message>
    <message>
        <source>Next probe</source>
        <translation>下次试探</translation>
    </message>
    <message>
        <source>By hand</source>
        <translation>手动</translation>
    </message>
    <message>
        <source>Ticket</source>
        <translation>工单</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>Open for</source>
        <translation>已打开</translation>
    </message>
    <message>
        <source>Problem</source>
        <translation>问题</translation>
    </message>
    <message>
        <source>Failure</source>
        <translation>失败情况</translation>
    </message>
    <message>
        <source>Signature</source>
        <translation>特征</translation>
    </message>
    <message>
        <source>Answer</source>
        <translation>处理</translation>
    </message>
    <message>
        <source>Note</source>
        <translation>备注</translation>
    </message>
    <message>
        <source>When</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>Rule</source>
        <translation>规则</translation>
    </message>
    <message>
        <source>Action</source>
        <translation>动作</translation>
    </message>
    <message>
        <source>Enabled</source>
        <translation>已启用</translation>
    </message>
    <message>
        <source>Hits</source>
        <translation>命中次数</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>done</source>
        <translation>完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Queue depth</source>
        <translation>队列长度</translation>
    </message>
    <message>
        <source>Throughput per minute</source>
        <translation>每分钟吞吐量</translation>
    </message>
    <message>
        <source>Success rate %</source>
        <translation>成功率 %</translation>
    </message>
    <message>
        <source>success</source>
        <translation>成功率</translation>
    </message>
    <message>
        <source>resume success</source>
        <translation>恢复成功率</translation>
    </message>
    <message>
        <source>Oldest wait (s)</source>
        <translation>最长等待（秒）</translation>
    </message>
    <message>
        <source>oldest wait</source>
        <translation>最长等待</translation>
    </message>
    <message>
        <source>Preemptions per hour</source>
        <translation>每小时抢占次数</translation>
    </message>
    <message>
        <source>preemptions</source>
        <translation>抢占</translation>
    </message>
    <message>
        <source>Open tickets</source>
        <translation>未处理工单</translation>
    </message>
    <message>
        <source>open tickets</source>
        <translation>未处理工单</translation>
    </message>
    <message>
        <source>Charts need pyqtgraph (pip install pyqtgraph).</source>
        <translation>图表需要 pyqtgraph（pip install pyqtgraph）。</translation>
    </message>
    <message>
        <source>Rate limit levels (tokens / burst)</source>
        <translation>限速余量（令牌 / 突发容量）</translation>
    </message>
    <message>
        <source>probe in %1</source>
        <translation>%1 后试探</translation>
    </message>
    <message>
        <source>all normal</source>
        <translation>全部正常</translation>
    </message>
    <message>
        <source>Breakers</source>
        <translation>熔断器</translation>
    </message>
    <message>
        <source>Flow</source>
        <translation>流程</translation>
    </message>
    <message>
        <source>Checkpoint</source>
        <translation>检查点</translation>
    </message>
    <message>
        <source>Results</source>
        <translation>结果</translation>
    </message>
    <message>
        <source>Evidence</source>
        <translation>证据</translation>
    </message>
    <message>
        <source>History</source>
        <translation>历史</translation>
    </message>
    <message>
        <source>Write</source>
        <translation>写操作</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Change</source>
        <translation>变化</translation>
    </message>
    <message>
        <source>Select a task to see its flow, checkpoint and history.</source>
        <translation>选择一个任务，查看其流程、检查点和历史。</translation>
    </message>
    <message>
        <source>write</source>
        <translation>写</translation>
    </message>
    <message>
        <source>not interruptible: never preempted inside this step</source>
        <translation>不可中断：此步骤中不会被抢占</translation>
    </message>
    <message>
        <source>(no checkpoint yet)</source>
        <translation>（尚无检查点）</translation>
    </message>
    <message>
        <source>(no results yet)</source>
        <translation>（尚无结果）</translation>
    </message>
    <message>
        <source>(no evidence: evidence is kept for failed attempts)</source>
        <translation>（无证据：只保存失败尝试的证据）</translation>
    </message>
    <message>
        <source>Bump priority</source>
        <translation>调整优先级</translation>
    </message>
    <message>
        <source>Set the score to</source>
        <translation>将分数设为</translation>
    </message>
    <message>
        <source>Change the score by</source>
        <translation>分数增减</translation>
    </message>
    <message>
        <source>%1 task(s) selected.</source>
        <translation>已选择 %1 个任务。</translation>
    </message>
    <message>
        <source>Requests per second</source>
        <translation>每秒请求数</translation>
    </message>
    <message>
        <source> /s</source>
        <translation> 次/秒</translation>
    </message>
    <message>
        <source>Submit tasks</source>
        <translation>提交任务</translation>
    </message>
    <message>
        <source>default for the type</source>
        <translation>按类型默认</translation>
    </message>
    <message>
        <source>Parameters (JSON)</source>
        <translation>参数（JSON）</translation>
    </message>
    <message>
        <source>Priority</source>
        <translation>优先级</translation>
    </message>
    <message>
        <source>How many</source>
        <translation>数量</translation>
    </message>
    <message>
        <source>a .json or .jsonl file</source>
        <translation>一个 .json 或 .jsonl 文件</translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation>选择…</translation>
    </message>
    <message>
        <source>Form</source>
        <translation>表单</translation>
    </message>
    <message>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>Import tasks</source>
        <translation>导入任务</translation>
    </message>
    <message>
        <source>Tasks (*.json *.jsonl);;All (*)</source>
        <translation>任务文件 (*.json *.jsonl);;所有文件 (*)</translation>
    </message>
    <message>
        <source>file</source>
        <translation>文件</translation>
    </message>
    <message>
        <source>choose a file</source>
        <translation>请选择文件</translation>
    </message>
    <message>
        <source>not JSON: %1</source>
        <translation>不是 JSON：%1</translation>
    </message>
    <message>
        <source>must be a number</source>
        <translation>必须是数字</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source>The language changes at once; "System" follows the computer's language.</source>
        <translation>语言立即切换；“跟随系统”使用电脑的语言。</translation>
    </message>
    <message>
        <source>Play a sound when a new ticket opens</source>
        <translation>有新工单时播放提示音</translation>
    </message>
    <message>
        <source>Notifications</source>
        <translation>通知</translation>
    </message>
    <message>
        <source>Configuration file</source>
        <translation>配置文件</translation>
    </message>
    <message>
        <source>Changes to the configuration apply when the console starts again; rate limits and breakers change live in the "Rate limits &amp; breakers" view.</source>
        <translation>配置修改在控制台重启后生效；限速和熔断器可在“限速与熔断”页面实时修改。</translation>
    </message>
    <message>
        <source>Rate limits (TOML)</source>
        <translation>限速（TOML）</translation>
    </message>
    <message>
        <source>General</source>
        <translation>常规</translation>
    </message>
    <message>
        <source>not valid TOML: %1</source>
        <translation>不是有效的 TOML：%1</translation>
    </message>
    <message>
        <source>the settings dialog</source>
        <translation>设置对话框</translation>
    </message>
    <message>
        <source>in %1</source>
        <translation>%1后</translation>
    </message>
    <message>
        <source>%1 late</source>
        <translation>已超时 %1</translation>
    </message>
    <message>
        <source>No task is waiting. Submit tasks with Tasks → Submit… (%1), or import a JSON file there.</source>
        <translation>没有等待中的任务。可通过“任务 → 提交…”（%1）提交任务，或在那里导入 JSON 文件。</translation>
    </message>
    <message>
        <source>Nothing is running. Tasks start here as soon as a browser and the site's rate limit allow; pending tasks are under Pending.</source>
        <translation>当前没有运行中的任务。只要浏览器和站点限速允许，任务就会在这里开始运行；排队的任务在“待处理”中。</translation>
    </message>
    <message>
        <source>No task is suspended. A running task lands here when more urgent work preempts it; it resumes by itself.</source>
        <translation>没有挂起的任务。运行中的任务被更紧急的工作抢占时会出现在这里，之后会自动继续。</translation>
    </message>
    <message>
        <source>Quarantine is empty. Tasks that failed every attempt come here; release them once the cause is fixed.</source>
        <translation>隔离区为空。所有尝试都失败的任务会进入这里；问题解决后可将其移出隔离。</translation>
    </message>
    <message>
        <source>No ticket is open: nothing needs a person. A ticket appears here (and in the tray) when a task needs you.</source>
        <translation>没有待处理的工单，暂时不需要人工。任务需要您处理时，工单会出现在这里（以及托盘图标上）。</translation>
    </message>
    <message>
        <source>No task has finished yet. Finished, failed and cancelled tasks are listed here.</source>
        <translation>还没有结束的任务。已完成、失败和已取消的任务会列在这里。</translation>
    </message>
    <message>
        <source>No shops yet. Add one with Shops → Add shop… (%1), or import a list (CSV or XLSX) with Shops → Import shops….</source>
        <translation>还没有店铺。用 店铺 → 添加店铺…（%1）添加，或用 店铺 → 导入店铺… 导入列表（CSV 或 XLSX）。</translation>
    </message>
    <message>
        <source>No rate limit has been used yet. Each site gets one when its first task runs; change it with Shops → Rate limit… (%1).</source>
        <translation>尚未使用任何限速。每个站点在第一个任务运行时获得限速；可通过“店铺 → 限速…”（%1）修改。</translation>
    </message>
    <message>
        <source>No breaker yet: each site gets one when its tasks run.</source>
        <translation>还没有熔断器：每个站点在其任务运行时获得一个熔断器。</translation>
    </message>
    <message>
        <source>The knowledge base is empty. Every ticket you answer is kept here, and shown when the same failure comes back.</source>
        <translation>知识库为空。您处理过的每个工单都会保存在这里，同样的失败再次出现时会显示出来。</translation>
    </message>
    <message>
        <source>No rules. Tick "Make this a rule" when answering a ticket to answer such failures by themselves.</source>
        <translation>没有规则。处理工单时勾选“设为规则”，以后同类失败会自动处理。</translation>
    </message>
    <message>
        <source>Only this console works on this queue. Other computers appear here when they run: shopfleet worker</source>
        <translation>目前只有本控制台在处理这个队列。其他电脑运行 shopfleet worker 后会出现在这里。</translation>
    </message>
    <message>
        <source>all</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>Filter: id, type, shop, error…</source>
        <translation>筛选：编号、类型、店铺、错误…</translation>
    </message>
    <message>
        <source>%1 tasks</source>
        <translation>%1 个任务</translation>
    </message>
    <message>
        <source>over %1 tasks</source>
        <translation>超过 %1 个任务</translation>
    </message>
    <message>
        <source>retry the task from its failed step after %1, without a ticket</source>
        <translation>在 %1 后从失败的步骤重试任务，不开工单</translation>
    </message>
    <message>
        <source>skip the failed step and go on with the next one, without a ticket</source>
        <translation>跳过失败的步骤并继续下一步，不开工单</translation>
    </message>
    <message>
        <source>open a ticket at once, without retrying</source>
        <translation>立即开工单，不重试</translation>
    </message>
    <message>
        <source>%1 makes no rule: a person finishing or cancelling a task is not something ShopFleet repeats on its own.</source>
        <translation>“%1”不会生成规则：由人完成或取消任务，ShopFleet 不会自动重复。</translation>
    </message>
    <message>
        <source>step “%1”</source>
        <translation>步骤“%1”</translation>
    </message>
    <message>
        <source>the start page</source>
        <translation>起始页</translation>
    </message>
    <message>
        <source>Rule: when a %1 task of platform %2 fails at %3 with %4, %5.</source>
        <translation>规则：平台 %2 的 %1 任务在 %3 因 %4 失败时，%5。</translation>
    </message>
    <message>
        <source>Retry: run the task again from the start</source>
        <translation>重试：从头再运行一次</translation>
    </message>
    <message>
        <source>Resume: continue from the failed step</source>
        <translation>继续：从失败的步骤继续</translation>
    </message>
    <message>
        <source>Skip: mark the failed step done and continue</source>
        <translation>跳过：将失败步骤标为完成并继续</translation>
    </message>
    <message>
        <source>Done: I finished it by hand</source>
        <translation>完成：我已手动完成</translation>
    </message>
    <message>
        <source>Cancel the task: drop it, do not run it again</source>
        <translation>终止任务：放弃该任务，不再运行</translation>
    </message>
    <message>
        <source>Ticket #%1 — task #%2</source>
        <translation>工单 #%1 — 任务 #%2</translation>
    </message>
    <message>
        <source>The same answer goes to %1 more selected ticket(s).</source>
        <translation>同样的处理会同时用于另外 %1 个已选工单。</translation>
    </message>
    <message>
        <source>Show technical details</source>
        <translation>显示技术详情</translation>
    </message>
    <message>
        <source>Open %1's browser, with its session, at the page where the task stopped; nothing else runs on the shop meanwhile. Close it to come back here.</source>
        <translation>打开 %1 的浏览器（带登录会话），停在任务中断的页面；期间该店铺不运行其他任务。关闭浏览器后回到这里。</translation>
    </message>
    <message>
        <source>Fit</source>
        <translation>适应窗口</translation>
    </message>
    <message>
        <source>(no screenshot: the page may have crashed)</source>
        <translation>（无截图：页面可能已崩溃）</translation>
    </message>
    <message>
        <source>(no DOM captured)</source>
        <translation>（未保存页面 DOM）</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>ms</source>
        <translation>毫秒</translation>
    </message>
    <message>
        <source>Screenshot</source>
        <translation>截图</translation>
    </message>
    <message>
        <source>Page (redacted)</source>
        <translation>页面（已脱敏）</translation>
    </message>
    <message>
        <source>Step log</source>
        <translation>步骤日志</translation>
    </message>
    <message>
        <source>Console</source>
        <translation>控制台日志</translation>
    </message>
    <message>
        <source>Earlier answers (%1)</source>
        <translation>以往处理（%1）</translation>
    </message>
    <message>
        <source>The shop's browser was closed and its session saved. How does the task go on?</source>
        <translation>店铺浏览器已关闭，会话已保存。任务接下来怎么处理？</translation>
    </message>
    <message>
        <source>A note for the knowledge base (what you saw, what you did)</source>
        <translation>给知识库的备注（看到了什么，做了什么）</translation>
    </message>
    <message>
        <source>after taking over the shop's browser</source>
        <translation>接管店铺浏览器之后</translation>
    </message>
    <message>
        <source>Make this a rule</source>
        <translation>生成规则</translation>
    </message>
    <message>
        <source>Make this a rule: answer such failures this way without a ticket</source>
        <translation>设为规则：以后同类失败自动这样处理，不再开工单</translation>
    </message>
    <message>
        <source>Retry after (minutes):</source>
        <translation>重试间隔（分钟）：</translation>
    </message>
    <message>
        <source>Send answer</source>
        <translation>提交处理</translation>
    </message>
    <message>
        <source>Send answer to %1 tickets</source>
        <translation>提交处理（%1 个工单）</translation>
    </message>
    <message>
        <source>Close (leave the ticket open)</source>
        <translation>关闭（工单保持待处理）</translation>
    </message>
    <message>
        <source>A change was being sent when the attempt stopped: nobody knows whether it went through.</source>
        <translation>尝试中断时正在提交一项修改：无法确定它是否已生效。</translation>
    </message>
    <message>
        <source>The write: step %1 “%2” (%3).</source>
        <translation>写入操作：第 %1 步“%2”（%3）。</translation>
    </message>
    <message>
        <source>Page where the task stopped: %1</source>
        <translation>任务中断时的页面：%1</translation>
    </message>
    <message>
        <source>Page where the task stopped: not recorded (see the screenshot)</source>
        <translation>任务中断时的页面：未记录（请看截图）</translation>
    </message>
    <message>
        <source>The flow's check (verify): %1 — it could not settle it.</source>
        <translation>流程的检查（verify）：%1 —— 未能确定结果。</translation>
    </message>
    <message>
        <source>The flow declares no check (verify) for this step, so only a person can tell.</source>
        <translation>流程没有为这一步声明检查（verify），只能由人判断。</translation>
    </message>
    <message>
        <source>Look at the shop first (Open the shop's browser, or the screenshot). If it went through, answer Skip. Resume and Retry send it again and ask you to confirm.</source>
        <translation>请先查看店铺（打开店铺浏览器或看截图）。若已生效，请选择“跳过”。“继续”和“重试”会再次提交，并需要你确认。</translation>
    </message>
    <message>
        <source>Tick the box to save this as a rule:</source>
        <translation>勾选上面的选项即可保存为规则：</translation>
    </message>
    <message>
        <source>Hide technical details</source>
        <translation>隐藏技术详情</translation>
    </message>
    <message>
        <source>step %1 “%2”</source>
        <translation>第 %1 步“%2”</translation>
    </message>
    <message>
        <source> (and the same for %1 more ticket(s))</source>
        <translation>（另外 %1 个工单同样处理）</translation>
    </message>
    <message>
        <source>Send the change again?</source>
        <translation>再次提交这项修改？</translation>
    </message>
    <message>
        <source>%1 for task %2: %3 may already have gone through. Sending it again can do it twice (a reply or an order sent twice).%4</source>
        <translation>对任务 %2 执行“%1”：%3 可能已经生效。再次提交可能重复执行（回复或订单发送两次）。%4</translation>
    </message>
    <message>
        <source>Send it again</source>
        <translation>再次提交</translation>
    </message>
    <message>
        <source>Back</source>
        <translation>返回</translation>
    </message>
    <message>
        <source>set</source>
        <translation>已设置</translation>
    </message>
    <message>
        <source>missing</source>
        <translation>缺失</translation>
    </message>
    <message>
        <source>The password is stored encrypted</source>
        <translation>密码已加密保存</translation>
    </message>
    <message>
        <source>No password: tasks that log in will fail. Shops → Set password…</source>
        <translation>没有密码：需要登录的任务会失败。店铺 → 设置密码…</translation>
    </message>
    <message>
        <source>proxy down</source>
        <translation>代理故障</translation>
    </message>
    <message>
        <source>%1 (shared)</source>
        <translation>%1（共用）</translation>
    </message>
    <message>
        <source>direct (others use a proxy)</source>
        <translation>直连（同平台其他店铺用代理）</translation>
    </message>
    <message>
        <source>direct</source>
        <translation>直连</translation>
    </message>
    <message>
        <source>No proxy, while other %1 shops use one</source>
        <translation>未设代理，而 %1 的其他店铺都用代理</translation>
    </message>
    <message>
        <source>Same exit address %1 as %2 (%3)</source>
        <translation>出口地址 %1 与 %2 相同（%3）</translation>
    </message>
    <message>
        <source>Same proxy %1 as %2 (%3)</source>
        <translation>代理 %1 与 %2 相同（%3）</translation>
    </message>
    <message>
        <source>Proxy down: %1</source>
        <translation>代理故障：%1</translation>
    </message>
    <message>
        <source>Its tasks wait for the proxy; other shops run.</source>
        <translation>该店铺的任务等待代理恢复；其他店铺照常运行。</translation>
    </message>
    <message>
        <source>Shops view</source>
        <translation>店铺视图</translation>
    </message>
    <message>
        <source>command line</source>
        <translation>命令行</translation>
    </message>
    <message>
        <source>%1, until %2</source>
        <translation>%1，至 %2</translation>
    </message>
    <message>
        <source>taken over by %1 until %2</source>
        <translation>由 %1 接管，至 %2</translation>
    </message>
    <message>
        <source>A person works in this shop's browser: none of its tasks starts until the browser is closed (or the hold runs out at %1 if its console stops).</source>
        <translation>有人正在此店铺的浏览器中操作：浏览器关闭前不会启动它的任何任务（若其控制台停止，占用将于 %1 自动结束）。</translation>
    </message>
    <message>
        <source>%1: done</source>
        <translation>%1：完成</translation>
    </message>
    <message>
        <source>Edit shop %1</source>
        <translation>编辑店铺 %1</translation>
    </message>
    <message>
        <source>leave empty to keep the current one</source>
        <translation>留空则保留当前密码</translation>
    </message>
    <message>
        <source>none yet: tasks that log in will fail</source>
        <translation>尚未设置：需要登录的任务会失败</translation>
    </message>
    <message>
        <source>one per line, e.g. https://img.example.com</source>
        <translation>每行一个，例如 https://img.example.com</translation>
    </message>
    <message>
        <source>Seller-centre address</source>
        <translation>商家后台地址</translation>
    </message>
    <message>
        <source>Other allowed origins</source>
        <translation>其他允许的来源</translation>
    </message>
    <message>
        <source>e.g. north 华北 big (spaces or commas between tags)</source>
        <translation>例如 north 华北 big（标签之间用空格或逗号分隔）</translation>
    </message>
    <message>
        <source>give at least one tag</source>
        <translation>请至少输入一个标签</translation>
    </message>
    <message>
        <source>Remove tags from %1 shop(s)</source>
        <translation>移除 %1 个店铺的标签</translation>
    </message>
    <message>
        <source>Tag %1 shop(s)</source>
        <translation>给 %1 个店铺添加标签</translation>
    </message>
    <message>
        <source>A tag is letters (any script), digits, '_', '-' or '.'. Views, schedules and commands pick a group by its tag (tag:north).</source>
        <translation>标签由字母（任何文字）、数字、'_'、'-' 或 '.' 组成。视图、定时任务和命令按标签选择店铺分组（tag:north）。</translation>
    </message>
    <message>
        <source>Network identity (profile)</source>
        <translation>网络身份（配置）</translation>
    </message>
    <message>
        <source>http://user@host:port — empty: direct</source>
        <translation>http://用户名@主机:端口 —— 留空：直连</translation>
    </message>
    <message>
        <source>stored encrypted; leave empty to keep it</source>
        <translation>已加密保存；留空则保留</translation>
    </message>
    <message>
        <source>if the proxy asks for one</source>
        <translation>代理需要时填写</translation>
    </message>
    <message>
        <source>platform's or zh-CN</source>
        <translation>平台设置或 zh-CN</translation>
    </message>
    <message>
        <source>platform's or this computer's, e.g. Asia/Shanghai</source>
        <translation>平台设置或本机时区，例如 Asia/Shanghai</translation>
    </message>
    <message>
        <source>platform's or the browser's own</source>
        <translation>平台设置或浏览器自带</translation>
    </message>
    <message>
        <source>one per line, e.g. X-Team: north</source>
        <translation>每行一个，例如 X-Team: north</translation>
    </message>
    <message>
        <source>Proxy</source>
        <translation>代理</translation>
    </message>
    <message>
        <source>Proxy password</source>
        <translation>代理密码</translation>
    </message>
    <message>
        <source>Language (locale)</source>
        <translation>语言（区域）</translation>
    </message>
    <message>
        <source>Time zone</source>
        <translation>时区</translation>
    </message>
    <message>
        <source>User agent</source>
        <translation>用户代理（UA）</translation>
    </message>
    <message>
        <source>Window size</source>
        <translation>窗口大小</translation>
    </message>
    <message>
        <source>Location</source>
        <translation>地理位置</translation>
    </message>
    <message>
        <source>Extra headers</source>
        <translation>附加请求头</translation>
    </message>
    <message>
        <source>Replace the password of %1</source>
        <translation>更换 %1 的密码</translation>
    </message>
    <message>
        <source>Set the password of %1</source>
        <translation>设置 %1 的密码</translation>
    </message>
    <message>
        <source>Again</source>
        <translation>再输一次</translation>
    </message>
    <message>
        <source>Stored encrypted with this store's key.</source>
        <translation>使用此数据库的密钥加密保存。</translation>
    </message>
    <message>
        <source>the two entries differ</source>
        <translation>两次输入不一致</translation>
    </message>
    <message>
        <source>Import shops from %1</source>
        <translation>从 %1 导入店铺</translation>
    </message>
    <message>
        <source>%1 shop(s) can be imported.</source>
        <translation>可以导入 %1 个店铺。</translation>
    </message>
    <message>
        <source>%1 of them have no password (flagged in the Shops view): %2</source>
        <translation>其中 %1 个没有密码（在店铺视图中标出）：%2</translation>
    </message>
    <message>
        <source>%1 row(s) have errors and are left out:</source>
        <translation>%1 行有错误，不会导入：</translation>
    </message>
    <message>
        <source>line %1: %2: %3</source>
        <translation>第 %1 行：%2：%3</translation>
    </message>
    <message>
        <source>Import %1 shop(s)</source>
        <translation>导入 %1 个店铺</translation>
    </message>
    <message>
        <source>Add shop %1</source>
        <translation>添加店铺 %1</translation>
    </message>
    <message>
        <source>Import shops</source>
        <translation>导入店铺</translation>
    </message>
    <message>
        <source>Shop lists (*.csv *.xlsx)</source>
        <translation>店铺列表 (*.csv *.xlsx)</translation>
    </message>
    <message>
        <source>%1 shop(s) imported</source>
        <translation>已导入 %1 个店铺</translation>
    </message>
    <message>
        <source>No password</source>
        <translation>无密码</translation>
    </message>
    <message>
        <source>Only shops without a password</source>
        <translation>只看没有密码的店铺</translation>
    </message>
    <message>
        <source>live</source>
        <translation>实时</translation>
    </message>
    <message>
        <source>Engine problem: %1</source>
        <translation>引擎问题：%1</translation>
    </message>
    <message>
        <source>Schedule %1 paused: %2</source>
        <translation>定时任务 %1 已暂停：%2</translation>
    </message>
    <message>
        <source>Schedule failed</source>
        <translation>定时任务失败</translation>
    </message>
    <message>
        <source>Breaker tripped</source>
        <translation>已熔断</translation>
    </message>
    <message>
        <source>Toolbar</source>
        <translation>工具栏</translation>
    </message>
    <message>
        <source>Show ShopFleet</source>
        <translation>显示 ShopFleet</translation>
    </message>
    <message>
        <source>Copied %1</source>
        <translation>已复制 %1</translation>
    </message>
    <message>
        <source>Export table</source>
        <translation>导出表格</translation>
    </message>
    <message>
        <source>Excel workbook (*.xlsx)</source>
        <translation>Excel 工作簿 (*.xlsx)</translation>
    </message>
    <message>
        <source>CSV, UTF-8 (*.csv)</source>
        <translation>CSV，UTF-8 (*.csv)</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <source>Exported %1 to %2</source>
        <translation>已导出 %1 到 %2</translation>
    </message>
    <message>
        <source>Resume all</source>
        <translation>全部恢复</translation>
    </message>
    <message>
        <source>Delete rules</source>
        <translation>删除规则</translation>
    </message>
    <message>
        <source>Delete %1 rule(s)? Their failures open tickets again.</source>
        <translation>删除 %1 条规则？同类失败将重新生成工单。</translation>
    </message>
    <message>
        <source>Delete rule</source>
        <translation>删除规则</translation>
    </message>
    <message>
        <source>ShopFleet %1 — runs the daily work of many online shops in real browsers.
Store: %2</source>
        <translation>ShopFleet %1 — 在真实浏览器中完成多个网店的日常工作。
存储：%2</translation>
    </message>
    <message>
        <source>queued %1 · running %2</source>
        <translation>排队 %1 · 运行中 %2</translation>
    </message>
    <message>
        <source>tickets %1 · quarantine %2</source>
        <translation>工单 %1 · 隔离 %2</translation>
    </message>
    <message>
        <source>breakers open %1 · workers lost %2</source>
        <translation>熔断 %1 · 失联工作进程 %2</translation>
    </message>
    <message>
        <source>Close ShopFleet</source>
        <translation>关闭 ShopFleet</translation>
    </message>
    <message>
        <source>Stop automation and quit? Running tasks save their place and go back to the queue.</source>
        <translation>停止自动化并退出？运行中的任务会保存进度并回到队列。</translation>
    </message>
    <message>
        <source>The browser of %1 is open (taken over). Quitting closes it, saves its session and gives the shop back to automation.</source>
        <translation>%1 的浏览器正被接管（仍打开）。退出会关闭它、保存会话，并把店铺交还给自动化。</translation>
    </message>
    <message>
        <source>Stop automation and quit</source>
        <translation>停止自动化并退出</translation>
    </message>
    <message>
        <source>Keep running in the tray</source>
        <translation>在托盘中继续运行</translation>
    </message>
    <message>
        <source>Keep running (minimise)</source>
        <translation>继续运行（最小化）</translation>
    </message>
    <message>
        <source>ShopFleet keeps running</source>
        <translation>ShopFleet 仍在运行</translation>
    </message>
    <message>
        <source>Automation goes on; the tray icon brings the window back.</source>
        <translation>自动化继续进行；点击托盘图标可重新打开窗口。</translation>
    </message>
    <message>
        <source>ShopFleet</source>
        <translation>ShopFleet</translation>
    </message>
    <message>
        <source>ALL PAUSED: no new task starts (Tasks → Resume all)</source>
        <translation>已全部暂停：不会启动新任务（任务 → 全部恢复）</translation>
    </message>
    <message>
        <source>Worker lost</source>
        <translation>工作进程失联</translation>
    </message>
    <message>
        <source>%1 stopped answering; its tasks go back to the queue</source>
        <translation>%1 已无响应；它的任务回到队列</translation>
    </message>
    <message>
        <source>Task quarantined</source>
        <translation>任务已隔离</translation>
    </message>
    <message>
        <source>Task #%1 (%2) is in quarantine: %3</source>
        <translation>任务 #%1（%2）已隔离：%3</translation>
    </message>
    <message>
        <source>held while a menu or dialog is open</source>
        <translation>菜单或对话框打开时保持不动</translation>
    </message>
    <message>
        <source>held under the pointer</source>
        <translation>鼠标在表格上，保持不动</translation>
    </message>
    <message>
        <source>queued %1 · running %2/%3 · tickets %4 · done/min %5 · failed/min %6 · oldest wait %7</source>
        <translation>排队 %1 · 运行 %2/%3 · 工单 %4 · 完成/分 %5 · 失败/分 %6 · 最长等待 %7</translation>
    </message>
    <message>
        <source>breaker tripped: %1</source>
        <translation>已熔断：%1</translation>
    </message>
    <message>
        <source>engine problem: %1</source>
        <translation>引擎问题：%1</translation>
    </message>
    <message>
        <source>browsers %1</source>
        <translation>浏览器 %1</translation>
    </message>
    <message>
        <source>store: %1</source>
        <translation>存储：%1</translation>
    </message>
    <message>
        <source>Every console and worker on this store shares its queue</source>
        <translation>连接此存储的所有控制台和工作节点共享同一队列</translation>
    </message>
    <message>
        <source>New ticket</source>
        <translation>新工单</translation>
    </message>
    <message>
        <source>Task #%1 (%2) needs a person: %3</source>
        <translation>任务 #%1（%2）需要人工处理：%3</translation>
    </message>
    <message>
        <source>Pending</source>
        <translation>待处理</translation>
    </message>
    <message>
        <source>In flight</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Suspended</source>
        <translation>已挂起</translation>
    </message>
    <message>
        <source>Quarantine</source>
        <translation>隔离区</translation>
    </message>
    <message>
        <source>Tickets</source>
        <translation>工单</translation>
    </message>
    <message>
        <source>Shops</source>
        <translation>店铺</translation>
    </message>
    <message>
        <source>Knowledge base &amp; rules</source>
        <translation>知识库与规则</translation>
    </message>
    <message>
        <source>Dashboard</source>
        <translation>仪表盘</translation>
    </message>
    <message>
        <source>Workers</source>
        <translation>工作节点</translation>
    </message>
    <message>
        <source>%1 lost</source>
        <translation>%1 个失联</translation>
    </message>
    <message>
        <source>ShopFleet console</source>
        <translation>ShopFleet 控制台</translation>
    </message>
    <message>
        <source>Submit…</source>
        <translation>提交…</translation>
    </message>
    <message>
        <source>Submit tasks from a form or a JSON/JSONL file</source>
        <translation>通过表单或 JSON/JSONL 文件提交任务</translation>
    </message>
    <message>
        <source>Change the priority of the selected tasks</source>
        <translation>修改选中任务的优先级</translation>
    </message>
    <message>
        <source>Preempt</source>
        <translation>抢占</translation>
    </message>
    <message>
        <source>Suspend the selected running task at its next safe step</source>
        <translation>在下一个安全步骤挂起选中的运行任务</translation>
    </message>
    <message>
        <source>Cancel the selected tasks</source>
        <translation>取消选中的任务</translation>
    </message>
    <message>
        <source>Cancel task</source>
        <translation>取消任务</translation>
    </message>
    <message>
        <source>Retry</source>
        <translation>重试</translation>
    </message>
    <message>
        <source>Run the selected finished tasks again</source>
        <translation>重新运行选中的已结束任务</translation>
    </message>
    <message>
        <source>Requeue the selected quarantined tasks</source>
        <translation>将选中的隔离任务重新排队</translation>
    </message>
    <message>
        <source>Pause all</source>
        <translation>全部暂停</translation>
    </message>
    <message>
        <source>Start no more tasks on this computer; running ones finish. Press again to resume all.</source>
        <translation>本机不再启动新任务，运行中的任务继续完成。再按一次全部恢复。</translation>
    </message>
    <message>
        <source>Answer ticket…</source>
        <translation>处理工单…</translation>
    </message>
    <message>
        <source>Pause shop</source>
        <translation>暂停店铺</translation>
    </message>
    <message>
        <source>Stop starting tasks of the selected shop</source>
        <translation>停止启动选中店铺的任务</translation>
    </message>
    <message>
        <source>Resume shop</source>
        <translation>恢复店铺</translation>
    </message>
    <message>
        <source>Start tasks of the selected shop again</source>
        <translation>恢复选中店铺的任务</translation>
    </message>
    <message>
        <source>Stop starting tasks on the selected shop's site</source>
        <translation>停止启动选中店铺所在站点的任务</translation>
    </message>
    <message>
        <source>Start tasks on the selected shop's site again</source>
        <translation>恢复选中店铺所在站点的任务</translation>
    </message>
    <message>
        <source>Stop a site's tasks by hand</source>
        <translation>手动停止该站点的任务</translation>
    </message>
    <message>
        <source>Let a site's tasks run again</source>
        <translation>恢复该站点的任务</translation>
    </message>
    <message>
        <source>Settings…</source>
        <translation>设置…</translation>
    </message>
    <message>
        <source>Work</source>
        <translation>工作</translation>
    </message>
    <message>
        <source>Later</source>
        <translation>定时</translation>
    </message>
    <message>
        <source>Sites</source>
        <translation>站点</translation>
    </message>
    <message>
        <source>Overview</source>
        <translation>概览</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Edit</source>
        <translation>编辑(&amp;E)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Tasks</source>
        <translation>任务(&amp;T)</translation>
    </message>
    <message>
        <source>Tic&amp;kets</source>
        <translation>工单(&amp;K)</translation>
    </message>
    <message>
        <source>&amp;Shops</source>
        <translation>店铺(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>Export table…</source>
        <translation>导出表格…</translation>
    </message>
    <message>
        <source>Save the whole table as a CSV or Excel file</source>
        <translation>将整个表格保存为 CSV 或 Excel 文件</translation>
    </message>
    <message>
        <source>Export selection…</source>
        <translation>导出所选…</translation>
    </message>
    <message>
        <source>Save the selected rows as a CSV or Excel file</source>
        <translation>将所选行保存为 CSV 或 Excel 文件</translation>
    </message>
    <message>
        <source>Configuration and language</source>
        <translation>配置与语言</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <source>Stop the engine (running tasks save their place) and close</source>
        <translation>停止引擎（运行中的任务会保存进度）并关闭</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy the selected rows as text (tab-separated, pastes into a spreadsheet)</source>
        <translation>以文本复制所选行（制表符分隔，可直接粘贴到表格软件）</translation>
    </message>
    <message>
        <source>Select all</source>
        <translation>全选</translation>
    </message>
    <message>
        <source>Select every row</source>
        <translation>选择所有行</translation>
    </message>
    <message>
        <source>Find…</source>
        <translation>查找…</translation>
    </message>
    <message>
        <source>Go to the filter of this table</source>
        <translation>转到本表的筛选框</translation>
    </message>
    <message>
        <source>Next view</source>
        <translation>下一个页面</translation>
    </message>
    <message>
        <source>Show the next view</source>
        <translation>显示下一个页面</translation>
    </message>
    <message>
        <source>Previous view</source>
        <translation>上一个页面</translation>
    </message>
    <message>
        <source>Show the previous view</source>
        <translation>显示上一个页面</translation>
    </message>
    <message>
        <source>Task details</source>
        <translation>任务详情</translation>
    </message>
    <message>
        <source>Show or hide the task details beside the table</source>
        <translation>显示或隐藏表格旁的任务详情</translation>
    </message>
    <message>
        <source>Refresh</source>
        <translation>刷新</translation>
    </message>
    <message>
        <source>Read every table again</source>
        <translation>重新读取所有表格</translation>
    </message>
    <message>
        <source>Change priority…</source>
        <translation>调整优先级…</translation>
    </message>
    <message>
        <source>Release from quarantine</source>
        <translation>移出隔离</translation>
    </message>
    <message>
        <source>Answer the selected tickets (several at once get the same answer)</source>
        <translation>处理所选工单（多选时统一处理）</translation>
    </message>
    <message>
        <source>Open the shop's browser</source>
        <translation>打开店铺浏览器</translation>
    </message>
    <message>
        <source>Open the selected ticket's (or shop's) browser with its session, at the page where the task stopped; nothing else runs on the shop until you close it</source>
        <translation>打开选中工单（或店铺）的浏览器（带登录会话），停在任务中断的页面；关闭前该店铺不运行其他任务</translation>
    </message>
    <message>
        <source>Edit rule…</source>
        <translation>编辑规则…</translation>
    </message>
    <message>
        <source>Change what the selected rule does, its delay and its note</source>
        <translation>修改选中规则的动作、延迟和备注</translation>
    </message>
    <message>
        <source>Enable rule</source>
        <translation>启用规则</translation>
    </message>
    <message>
        <source>Let the selected rules answer failures again</source>
        <translation>让所选规则重新自动处理失败</translation>
    </message>
    <message>
        <source>Disable rule</source>
        <translation>停用规则</translation>
    </message>
    <message>
        <source>Stop the selected rules; their failures open tickets again</source>
        <translation>停用所选规则；同类失败将重新生成工单</translation>
    </message>
    <message>
        <source>Delete rule…</source>
        <translation>删除规则…</translation>
    </message>
    <message>
        <source>Delete the selected rules</source>
        <translation>删除所选规则</translation>
    </message>
    <message>
        <source>Add shop…</source>
        <translation>添加店铺…</translation>
    </message>
    <message>
        <source>Register a shop: platform, address, login name, password</source>
        <translation>登记店铺：平台、地址、登录名、密码</translation>
    </message>
    <message>
        <source>Edit shop…</source>
        <translation>编辑店铺…</translation>
    </message>
    <message>
        <source>Change the selected shop's login name, allowed origins or password</source>
        <translation>修改所选店铺的登录名、允许的来源或密码</translation>
    </message>
    <message>
        <source>Set password…</source>
        <translation>设置密码…</translation>
    </message>
    <message>
        <source>Set or replace the selected shop's password (stored encrypted)</source>
        <translation>设置或更换所选店铺的密码（加密保存）</translation>
    </message>
    <message>
        <source>Tag shops…</source>
        <translation>添加标签…</translation>
    </message>
    <message>
        <source>Add tags to the selected shops (shop groups for --shops tag:…)</source>
        <translation>给选中的店铺添加标签（店铺分组，可用 --shops tag:… 选择）</translation>
    </message>
    <message>
        <source>Untag shops…</source>
        <translation>移除标签…</translation>
    </message>
    <message>
        <source>Remove tags from the selected shops</source>
        <translation>移除选中店铺的标签</translation>
    </message>
    <message>
        <source>Import shops…</source>
        <translation>导入店铺…</translation>
    </message>
    <message>
        <source>Add the shops of a CSV or XLSX list (each row's errors shown first)</source>
        <translation>从 CSV 或 XLSX 列表添加店铺（先列出每行的错误）</translation>
    </message>
    <message>
        <source>Pause site</source>
        <translation>暂停站点</translation>
    </message>
    <message>
        <source>Resume site</source>
        <translation>恢复站点</translation>
    </message>
    <message>
        <source>Rate limit…</source>
        <translation>限速…</translation>
    </message>
    <message>
        <source>Change how many requests per second a site gets</source>
        <translation>修改站点每秒允许的请求数</translation>
    </message>
    <message>
        <source>Trip breaker</source>
        <translation>手动熔断</translation>
    </message>
    <message>
        <source>Reset breaker</source>
        <translation>解除熔断</translation>
    </message>
    <message>
        <source>Keyboard shortcuts</source>
        <translation>快捷键</translation>
    </message>
    <message>
        <source>Every action and its key</source>
        <translation>所有操作及其快捷键</translation>
    </message>
    <message>
        <source>About ShopFleet</source>
        <translation>关于 ShopFleet</translation>
    </message>
    <message>
        <source>Version and data folder</source>
        <translation>版本与数据文件夹</translation>
    </message>
    <message>
        <source>Show this view</source>
        <translation>显示此页面</translation>
    </message>
    <message>
        <source>Rate limits &amp; breakers</source>
        <translation>限速与熔断</translation>
    </message>
    <message>
        <source>Scheduled</source>
        <translation>待定时</translation>
    </message>
    <message>
        <source>Schedules</source>
        <translation>定时任务</translation>
    </message>
    <message>
        <source>Cancel tasks</source>
        <translation>取消任务</translation>
    </message>
    <message>
        <source>#%1 (%2, %3)</source>
        <translation>#%1（%2，%3）</translation>
    </message>
    <message>
        <source>%1 and %2 more</source>
        <translation>%1 等另外 %2 个</translation>
    </message>
    <message>
        <source>Change priority of %1</source>
        <translation>调整 %1 的优先级</translation>
    </message>
    <message>
        <source>Cancel %1? Running ones stop at their next step.</source>
        <translation>取消 %1？运行中的任务会在下一步停止。</translation>
    </message>
    <message>
        <source>Cancel %1</source>
        <translation>取消 %1</translation>
    </message>
    <message>
        <source>Retry %1</source>
        <translation>重试 %1</translation>
    </message>
    <message>
        <source>Preempt tasks</source>
        <translation>抢占任务</translation>
    </message>
    <message>
        <source>Preempt %1? It stops at its next safe step and waits in Suspended.</source>
        <translation>抢占 %1？它会在下一个安全步骤停下，在“已挂起”中等待。</translation>
    </message>
    <message>
        <source>Preempt %1</source>
        <translation>抢占 %1</translation>
    </message>
    <message>
        <source>Release %1 from quarantine</source>
        <translation>将 %1 移出隔离</translation>
    </message>
    <message>
        <source>Submitted %1 task(s)</source>
        <translation>已提交 %1 个任务</translation>
    </message>
    <message>
        <source>Open ticket</source>
        <translation>打开工单</translation>
    </message>
    <message>
        <source>Answer ticket</source>
        <translation>处理工单</translation>
    </message>
    <message>
        <source>(not saved)</source>
        <translation>（不保存）</translation>
    </message>
    <message>
        <source>Settings not saved: this console has no configuration file</source>
        <translation>设置未保存：此控制台没有配置文件</translation>
    </message>
    <message>
        <source>Save settings</source>
        <translation>保存设置</translation>
    </message>
    <message>
        <source>Settings saved to %1; they apply at the next start</source>
        <translation>设置已保存到 %1，下次启动时生效</translation>
    </message>
    <message>
        <source>Stopping: running tasks save their place…</source>
        <translation>正在停止：运行中的任务正在保存进度…</translation>
    </message>
    <message>
        <source>Give the shop a name.</source>
        <translation>请为店铺起个名字。</translation>
    </message>
    <message>
        <source>There is already a shop named %1.</source>
        <translation>已有名为 %1 的店铺。</translation>
    </message>
    <message>
        <source>Choose the shop's platform.</source>
        <translation>请选择店铺所在的平台。</translation>
    </message>
    <message>
        <source>Looking for a browser…</source>
        <translation>正在查找浏览器…</translation>
    </message>
    <message>
        <source>ShopFleet drives an installed Google Chrome or Microsoft Edge: no download is needed. Without either, install Chrome or Edge, set a browser path in the settings, or download Chromium here (about 150 MB, needs the internet).</source>
        <translation>ShopFleet 使用已安装的 Google Chrome 或 Microsoft Edge，无需下载。如果两者都没有，请安装 Chrome 或 Edge，在设置中指定浏览器路径，或在此下载 Chromium（约 150 MB，需要联网）。</translation>
    </message>
    <message>
        <source>Check again</source>
        <translation>重新检查</translation>
    </message>
    <message>
        <source>Install browser (Chromium)</source>
        <translation>安装浏览器（Chromium）</translation>
    </message>
    <message>
        <source>The browser check failed: %1</source>
        <translation>浏览器检查失败：%1</translation>
    </message>
    <message>
        <source>Downloading Chromium… (this can take a few minutes)</source>
        <translation>正在下载 Chromium…（可能需要几分钟）</translation>
    </message>
    <message>
        <source>The browser installer failed: %1</source>
        <translation>浏览器安装失败：%1</translation>
    </message>
    <message>
        <source>ShopFleet will use %1.</source>
        <translation>ShopFleet 将使用 %1。</translation>
    </message>
    <message>
        <source>No browser found. Install Google Chrome or Microsoft Edge, or use "Install browser" to download Chromium.</source>
        <translation>未找到浏览器。请安装 Google Chrome 或 Microsoft Edge，或点击“安装浏览器”下载 Chromium。</translation>
    </message>
    <message>
        <source>Chromium is installed.</source>
        <translation>Chromium 已安装。</translation>
    </message>
    <message>
        <source>The browser could not be downloaded: this computer cannot reach the download server (no internet connection, or a proxy or firewall in the way). Connect to the internet and try again, or install Google Chrome or Microsoft Edge, which need no download.</source>
        <translation>无法下载浏览器：这台电脑连不上下载服务器（没有网络，或被代理、防火墙拦截）。请联网后重试，或安装无需下载的 Google Chrome 或 Microsoft Edge。</translation>
    </message>
    <message>
        <source>The base URL must start with http:// or https://, e.g. %1.</source>
        <translation>基础网址必须以 http:// 或 https:// 开头，例如 %1。</translation>
    </message>
    <message>
        <source>Welcome to ShopFleet</source>
        <translation>欢迎使用 ShopFleet</translation>
    </message>
    <message>
        <source>ShopFleet keeps its database, saved sessions and evidence in this folder:</source>
        <translation>ShopFleet 把数据库、已保存的登录会话和证据保存在这个文件夹中：</translation>
    </message>
    <message>
        <source>Uninstalling ShopFleet leaves this folder in place, so nothing is lost by reinstalling; delete it yourself to remove your data.</source>
        <translation>卸载 ShopFleet 会保留这个文件夹，重新安装不会丢失任何内容；如需删除数据，请手动删除该文件夹。</translation>
    </message>
    <message>
        <source>Set up my shops</source>
        <translation>设置我的店铺</translation>
    </message>
    <message>
        <source>Try the demo first (a built-in practice site; nothing is saved)</source>
        <translation>先试用演示（内置练习网站，不保存任何内容）</translation>
    </message>
    <message>
        <source>ShopFleet runs your shops' work in a real browser.</source>
        <translation>ShopFleet 在真实的浏览器中完成店铺的工作。</translation>
    </message>
    <message>
        <source>Your shops</source>
        <translation>您的店铺</translation>
    </message>
    <message>
        <source>Add the shops ShopFleet should work for. You can add more later.</source>
        <translation>添加需要 ShopFleet 处理的店铺，以后还可以继续添加。</translation>
    </message>
    <message>
        <source>Add shop</source>
        <translation>添加店铺</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Base URL</source>
        <translation>基础网址</translation>
    </message>
    <message>
        <source>User name</source>
        <translation>用户名</translation>
    </message>
    <message>
        <source>Shops to add: %1.</source>
        <translation>要添加的店铺：%1。</translation>
    </message>
    <message>
        <source>Password</source>
        <translation>密码</translation>
    </message>
    <message>
        <source>Flows</source>
        <translation>流程</translation>
    </message>
    <message>
        <source>Flows say what a task does, step by step. ShopFleet ships flows for replies, campaign sign-ups, uploads and data collection; import your own JSON flow files here (optional).</source>
        <translation>流程逐步描述任务要做的事。ShopFleet 自带回复、活动报名、上传商品和数据采集的流程；可在此导入您自己的 JSON 流程文件（可选）。</translation>
    </message>
    <message>
        <source>Import flow files…</source>
        <translation>导入流程文件…</translation>
    </message>
    <message>
        <source>Import flow files</source>
        <translation>导入流程文件</translation>
    </message>
    <message>
        <source>Flow files (*.json)</source>
        <translation>流程文件 (*.json)</translation>
    </message>
    <message>
        <source>Two of the chosen files have the same file name.</source>
        <translation>所选文件中有两个同名文件。</translation>
    </message>
    <message>
        <source>Cannot read %1: %2</source>
        <translation>无法读取 %1：%2</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>准备就绪</translation>
    </message>
    <message>
        <source>ShopFleet — first start</source>
        <translation>ShopFleet — 首次启动</translation>
    </message>
    <message>
        <source>ShopFleet will open the demo: a practice seller site on this computer with nine shops and a stream of tasks. Your data folder stays empty; this wizard comes back when you start ShopFleet next time.</source>
        <translation>ShopFleet 将打开演示：本机上的一个练习卖家网站，包含九个店铺和持续到来的任务。您的数据文件夹保持为空；下次启动 ShopFleet 时会再次显示此向导。</translation>
    </message>
    <message>
        <source>The database will be created at %1.</source>
        <translation>数据库将创建在 %1。</translation>
    </message>
    <message>
        <source>No shops yet: add them later in the console.</source>
        <translation>暂无店铺：稍后可在控制台中添加。</translation>
    </message>
    <message>
        <source>Flows to import into %1: %2.</source>
        <translation>要导入到 %1 的流程：%2。</translation>
    </message>
    <message>
        <source>No browser yet: tasks wait until one is installed.</source>
        <translation>尚无浏览器：任务会等待，直到安装好浏览器。</translation>
    </message>
    <message>
        <source>Could not finish: %1</source>
        <translation>无法完成：%1</translation>
    </message>
    <message>
        <source>Reply to customers</source>
        <translation>回复客户</translation>
    </message>
    <message>
        <source>Campaign sign-up</source>
        <translation>活动报名</translation>
    </message>
    <message>
        <source>Upload products</source>
        <translation>上传商品</translation>
    </message>
    <message>
        <source>Collect data</source>
        <translation>采集数据</translation>
    </message>
    <message>
        <source>Pinduoduo</source>
        <translation>拼多多</translation>
    </message>
    <message>
        <source>Quarantined</source>
        <translation>已隔离</translation>
    </message>
    <message>
        <source>Done</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>To do</source>
        <translation>待执行</translation>
    </message>
    <message>
        <source>Current</source>
        <translation>当前</translation>
    </message>
    <message>
        <source>Unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>Skipped</source>
        <translation>已跳过</translation>
    </message>
    <message>
        <source>Replayed</source>
        <translation>已重放</translation>
    </message>
    <message>
        <source>Verified</source>
        <translation>已核实</translation>
    </message>
    <message>
        <source>Online</source>
        <translation>在线</translation>
    </message>
    <message>
        <source>Stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>Lost</source>
        <translation>失联</translation>
    </message>
    <message>
        <source>URL</source>
        <translation>网址</translation>
    </message>
    <message>
        <source>Text</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>Option</source>
        <translation>选项</translation>
    </message>
    <message>
        <source>File (in an asset folder)</source>
        <translation>文件（在素材文件夹中）</translation>
    </message>
    <message>
        <source>Result name</source>
        <translation>结果名称</translation>
    </message>
    <message>
        <source>Key</source>
        <translation>按键</translation>
    </message>
    <message>
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>… and %1 more</source>
        <translation>…… 另有 %1 项</translation>
    </message>
    <message>
        <source>Saved to %1</source>
        <translation>已保存到 %1</translation>
    </message>
    <message>
        <source>Done. Results: %1</source>
        <translation>完成。结果：%1</translation>
    </message>
    <message>
        <source>Note: %1</source>
        <translation>提示：%1</translation>
    </message>
    <message>
        <source>Replace a shipped flow?</source>
        <translation>替换内置流程？</translation>
    </message>
    <message>
        <source>%1

Replace the shipped flow's file with this one? Choose No to save it under another name.</source>
        <translation>%1

用此流程替换内置流程的文件吗？选择“否”可改用其他名称保存。</translation>
    </message>
    <message>
        <source>Not saved: %1</source>
        <translation>未保存：%1</translation>
    </message>
    <message>
        <source>FAILED at step %1: %2</source>
        <translation>第 %1 步失败：%2</translation>
    </message>
    <message>
        <source>  evidence %1: %2</source>
        <translation>  证据 %1：%2</translation>
    </message>
    <message>
        <source>%1 failed: %2</source>
        <translation>%1 失败：%2</translation>
    </message>
    <message>
        <source>Running %1 on shop %2…</source>
        <translation>正在店铺 %2 上运行 %1……</translation>
    </message>
    <message>
        <source>Start page failed: %1</source>
        <translation>起始页失败：%1</translation>
    </message>
    <message>
        <source>Point at the element in the browser (a pick button, then the element)…</source>
        <translation>请在浏览器中指向元素（先点选取按钮，再点元素）……</translation>
    </message>
    <message>
        <source>Recording on shop %1: do the work in the browser, then press Finish in its toolbar.</source>
        <translation>正在店铺 %1 上录制：在浏览器中完成操作，然后点击工具栏中的“完成”。</translation>
    </message>
    <message>
        <source>Flow editor</source>
        <translation>流程编辑器</translation>
    </message>
    <message>
        <source>Start page</source>
        <translation>起始页</translation>
    </message>
    <message>
        <source>Description</source>
        <translation>说明</translation>
    </message>
    <message>
        <source>Open</source>
        <translation>待处理</translation>
    </message>
    <message>
        <source>Edit an existing flow:</source>
        <translation>编辑已有流程：</translation>
    </message>
    <message>
        <source>Insert step</source>
        <translation>插入步骤</translation>
    </message>
    <message>
        <source>Delete step</source>
        <translation>删除步骤</translation>
    </message>
    <message>
        <source>Move up</source>
        <translation>上移</translation>
    </message>
    <message>
        <source>Move down</source>
        <translation>下移</translation>
    </message>
    <message>
        <source>Locator</source>
        <translation>定位器</translation>
    </message>
    <message>
        <source>Pick in page…</source>
        <translation>在页面中选取…</translation>
    </message>
    <message>
        <source>Writes to the site</source>
        <translation>会写入网站</translation>
    </message>
    <message>
        <source>Interruptible</source>
        <translation>可中断</translation>
    </message>
    <message>
        <source>Only if visible</source>
        <translation>仅当可见时</translation>
    </message>
    <message>
        <source>Timeout (s, 0 = default)</source>
        <translation>超时（秒，0 = 默认）</translation>
    </message>
    <message>
        <source>Step name</source>
        <translation>步骤名称</translation>
    </message>
    <message>
        <source>Parameters (KEY=VALUE a line)</source>
        <translation>参数（每行一个 键=值）</translation>
    </message>
    <message>
        <source>Run on shop</source>
        <translation>在店铺上运行</translation>
    </message>
    <message>
        <source>Save</source>
        <translation>保存</translation>
    </message>
    <message>
        <source>Record a flow…</source>
        <translation>录制流程…</translation>
    </message>
    <message>
        <source>skipped</source>
        <translation>已跳过</translation>
    </message>
    <message>
        <source>verified</source>
        <translation>已验证</translation>
    </message>
    <message>
        <source>replayed</source>
        <translation>已重放</translation>
    </message>
    <message>
        <source>Flow editor…</source>
        <translation>流程编辑器…</translation>
    </message>
    <message>
        <source>Edit a flow's steps, check them, run them on a shop</source>
        <translation>编辑流程步骤、检查并在店铺上运行</translation>
    </message>
    <message>
        <source>Make a flow by doing the work once in a shop's browser</source>
        <translation>在店铺浏览器中操作一遍即可生成流程</translation>
    </message>
    <message>
        <source>Answered</source>
        <translation>已处理</translation>
    </message>
    <message>
        <source>Normal</source>
        <translation>正常</translation>
    </message>
    <message>
        <source>Tripped</source>
        <translation>已熔断</translation>
    </message>
    <message>
        <source>Probing</source>
        <translation>试探中</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Skip step</source>
        <translation>跳过此步</translation>
    </message>
    <message>
        <source>Mark done</source>
        <translation>标为完成</translation>
    </message>
    <message>
        <source>Ask a person</source>
        <translation>转人工</translation>
    </message>
    <message>
        <source>Retry later</source>
        <translation>稍后重试</translation>
    </message>
    <message>
        <source>The site did not answer properly (server error or no connection)</source>
        <translation>站点未正常响应（服务器错误或无法连接）</translation>
    </message>
    <message>
        <source>The site asked to slow down (rate limited)</source>
        <translation>站点要求放慢速度（触发速率限制）</translation>
    </message>
    <message>
        <source>The page has changed: an element the flow needs is missing</source>
        <translation>页面已改版：找不到流程需要的元素</translation>
    </message>
    <message>
        <source>A CAPTCHA or login check on the page needs a person</source>
        <translation>页面出现验证码或登录校验，需要人工处理</translation>
    </message>
    <message>
        <source>A change was cut off: check on the site whether it went through</source>
        <translation>修改操作被中断：请到站点上确认是否已生效</translation>
    </message>
    <message>
        <source>The browser crashed</source>
        <translation>浏览器崩溃</translation>
    </message>
    <message>
        <source>A step took too long</source>
        <translation>步骤超时</translation>
    </message>
    <message>
        <source>The task failed</source>
        <translation>任务失败</translation>
    </message>
    <message>
        <source>Stopped at the trust boundary</source>
        <translation>已在安全边界处拦截</translation>
    </message>
    <message>
        <source>Stopped: the page went to a site the shop does not allow</source>
        <translation>已拦截：页面跳转到了店铺不允许的站点</translation>
    </message>
    <message>
        <source>Stopped: a password would have gone where it must not</source>
        <translation>已拦截：密码差点被填到不该填的地方</translation>
    </message>
    <message>
        <source>Some input is not valid</source>
        <translation>输入有误</translation>
    </message>
    <message>
        <source>The configuration is not valid</source>
        <translation>配置有误</translation>
    </message>
    <message>
        <source>The task is not valid</source>
        <translation>任务内容有误</translation>
    </message>
    <message>
        <source>There is no such task</source>
        <translation>没有这个任务</translation>
    </message>
    <message>
        <source>The vault key is missing or wrong</source>
        <translation>密钥缺失或不匹配</translation>
    </message>
    <message>
        <source>The queue is full; nothing was added</source>
        <translation>队列已满，未添加任何任务</translation>
    </message>
    <message>
        <source>This cannot be done right now</source>
        <translation>当前无法执行此操作</translation>
    </message>
    <message>
        <source>This computer lacks something ShopFleet needs</source>
        <translation>这台电脑缺少 ShopFleet 需要的组件</translation>
    </message>
    <message>
        <source>The disk is full; nothing was written</source>
        <translation>磁盘已满，未写入任何内容</translation>
    </message>
    <message>
        <source>The database is closed</source>
        <translation>数据库已关闭</translation>
    </message>
    <message>
        <source>The shared queue cannot be reached; try again</source>
        <translation>无法连接共享队列，请稍后再试</translation>
    </message>
    <message>
        <source>Another worker took over the task</source>
        <translation>任务已被其他工作节点接管</translation>
    </message>
    <message>
        <source>Queue</source>
        <translation>队列</translation>
    </message>
    <message>
        <source>Browser pool</source>
        <translation>浏览器池</translation>
    </message>
    <message>
        <source>Database</source>
        <translation>数据库</translation>
    </message>
    <message>
        <source>Most queued tasks</source>
        <translation>最多排队任务数</translation>
    </message>
    <message>
        <source>Submissions beyond this many waiting tasks are refused (queued, scheduled for later or suspended).</source>
        <translation>等待中的任务（排队、定时或挂起）超过此数量时拒绝新提交。</translation>
    </message>
    <message>
        <source>Look for due schedules every (seconds)</source>
        <translation>检查到期计划的间隔（秒）</translation>
    </message>
    <message>
        <source>A schedule's firing starts at most this late (0.5 to 300).</source>
        <translation>计划的触发最多延迟这么久开始（0.5 到 300）。</translation>
    </message>
    <message>
        <source>Extra room for urgent tasks (share)</source>
        <translation>紧急任务额外预留（比例）</translation>
    </message>
    <message>
        <source>Beyond the most queued tasks, this share (0–1) more is kept for urgent tasks.</source>
        <translation>在最多排队任务数之外，再按此比例（0–1）为紧急任务预留空间。</translation>
    </message>
    <message>
        <source>Tasks per shop at once</source>
        <translation>每个店铺同时运行的任务数</translation>
    </message>
    <message>
        <source>How many tasks of one shop may run at the same time.</source>
        <translation>同一店铺最多同时运行几个任务。</translation>
    </message>
    <message>
        <source>Lease (seconds)</source>
        <translation>任务租约（秒）</translation>
    </message>
    <message>
        <source>How long a worker holds a task before others may take it over.</source>
        <translation>工作节点持有任务多久后其他节点可接管。</translation>
    </message>
    <message>
        <source>Look for lost tasks every (seconds)</source>
        <translation>检查丢失任务的间隔（秒）</translation>
    </message>
    <message>
        <source>How often tasks of vanished workers are put back.</source>
        <translation>多久把失联节点的任务放回队列一次。</translation>
    </message>
    <message>
        <source>Heartbeat (seconds)</source>
        <translation>心跳间隔（秒）</translation>
    </message>
    <message>
        <source>How often a worker says it is alive.</source>
        <translation>工作节点多久报告一次在线。</translation>
    </message>
    <message>
        <source>Worker lost after (seconds)</source>
        <translation>判定失联时间（秒）</translation>
    </message>
    <message>
        <source>A worker silent this long is shown as lost.</source>
        <translation>工作节点超过此时间无心跳即显示为失联。</translation>
    </message>
    <message>
        <source>Most attempts</source>
        <translation>最多尝试次数</translation>
    </message>
    <message>
        <source>After this many failed attempts a task goes to quarantine.</source>
        <translation>失败达到此次数后任务进入隔离区。</translation>
    </message>
    <message>
        <source>First retry after (seconds)</source>
        <translation>首次重试等待（秒）</translation>
    </message>
    <message>
        <source>The wait before a failed task is tried again; it doubles each time.</source>
        <translation>失败任务重试前的等待时间，每次加倍。</translation>
    </message>
    <message>
        <source>Longest retry wait (seconds)</source>
        <translation>最长重试等待（秒）</translation>
    </message>
    <message>
        <source>The retry wait never grows beyond this.</source>
        <translation>重试等待时间不会超过此值。</translation>
    </message>
    <message>
        <source>Largest task (bytes)</source>
        <translation>任务最大大小（字节）</translation>
    </message>
    <message>
        <source>A task whose data is bigger is refused.</source>
        <translation>数据超过此大小的任务会被拒绝。</translation>
    </message>
    <message>
        <source>Priority gained per minute of waiting</source>
        <translation>每等待一分钟提升的优先级</translation>
    </message>
    <message>
        <source>Waiting tasks move up by this much each minute, so none waits forever.</source>
        <translation>等待中的任务每分钟提升这么多优先级，避免任务一直等待。</translation>
    </message>
    <message>
        <source>Jump the queue after (minutes)</source>
        <translation>等待多久后插队（分钟）</translation>
    </message>
    <message>
        <source>A task waiting this long goes ahead of all normal work.</source>
        <translation>等待超过此时间的任务排在所有普通任务之前。</translation>
    </message>
    <message>
        <source>Bonus for retried tasks</source>
        <translation>重试任务加分</translation>
    </message>
    <message>
        <source>Added to the priority of a task being retried.</source>
        <translation>重试任务的优先级额外加上此值。</translation>
    </message>
    <message>
        <source>Preempt when ahead by</source>
        <translation>抢占所需的优先级差</translation>
    </message>
    <message>
        <source>A waiting task this much more urgent than a running one suspends it at a safe step.</source>
        <translation>等待任务比运行中的任务紧急这么多时，会在安全步骤挂起后者。</translation>
    </message>
    <message>
        <source>Re-rate urgency every (seconds)</source>
        <translation>重新评估紧急程度的间隔（秒）</translation>
    </message>
    <message>
        <source>How often deadlines and platform rules are re-evaluated.</source>
        <translation>多久重新计算一次截止时间和平台规则。</translation>
    </message>
    <message>
        <source>Most browsers</source>
        <translation>最多浏览器数</translation>
    </message>
    <message>
        <source>How many browsers may run at the same time.</source>
        <translation>最多同时运行的浏览器数量。</translation>
    </message>
    <message>
        <source>Browsers kept ready</source>
        <translation>预热浏览器数</translation>
    </message>
    <message>
        <source>Browsers started ahead of work, so tasks start at once.</source>
        <translation>提前启动的浏览器，任务可立即开始。</translation>
    </message>
    <message>
        <source>Tasks per browser before a restart</source>
        <translation>浏览器重启前的任务数</translation>
    </message>
    <message>
        <source>A browser is replaced after this many tasks.</source>
        <translation>浏览器运行这么多任务后会被替换。</translation>
    </message>
    <message>
        <source>Close idle browsers after (seconds)</source>
        <translation>空闲浏览器关闭时间（秒）</translation>
    </message>
    <message>
        <source>A browser with nothing to do this long is closed.</source>
        <translation>空闲超过此时间的浏览器会被关闭。</translation>
    </message>
    <message>
        <source>Closing a browser may take (seconds)</source>
        <translation>关闭浏览器的等待时间（秒）</translation>
    </message>
    <message>
        <source>After this, a browser that does not close is killed.</source>
        <translation>超过此时间仍未关闭的浏览器会被强制结束。</translation>
    </message>
    <message>
        <source>Step time limit (seconds)</source>
        <translation>单步时限（秒）</translation>
    </message>
    <message>
        <source>A step that takes longer fails with a time-out.</source>
        <translation>超过此时间的步骤按超时失败处理。</translation>
    </message>
    <message>
        <source>Shops per browser</source>
        <translation>每个浏览器的店铺数</translation>
    </message>
    <message>
        <source>How many shops share one browser, each in its own profile.</source>
        <translation>多少个店铺共用一个浏览器，每个店铺使用独立的配置。</translation>
    </message>
    <message>
        <source>Prepare shop profiles ahead</source>
        <translation>提前准备店铺配置</translation>
    </message>
    <message>
        <source>Open shop profiles before their tasks start.</source>
        <translation>在任务开始前打开店铺配置。</translation>
    </message>
    <message>
        <source>Failures before tripping</source>
        <translation>熔断前允许的失败次数</translation>
    </message>
    <message>
        <source>This many site failures in the window trip the site's breaker: its tasks stop.</source>
        <translation>统计窗口内站点失败达到此次数即熔断：该站点的任务停止。</translation>
    </message>
    <message>
        <source>Counting window (seconds)</source>
        <translation>统计窗口（秒）</translation>
    </message>
    <message>
        <source>Failures older than this no longer count.</source>
        <translation>早于此时间的失败不再计入。</translation>
    </message>
    <message>
        <source>First probe after (seconds)</source>
        <translation>首次试探等待（秒）</translation>
    </message>
    <message>
        <source>A tripped breaker tries one task after this long.</source>
        <translation>熔断后等待这么久再试探运行一个任务。</translation>
    </message>
    <message>
        <source>Longest wait between probes (seconds)</source>
        <translation>两次试探的最长间隔（秒）</translation>
    </message>
    <message>
        <source>The wait between probes never grows beyond this.</source>
        <translation>试探间隔不会超过此值。</translation>
    </message>
    <message>
        <source>Browser program</source>
        <translation>浏览器程序</translation>
    </message>
    <message>
        <source>The browser to drive; empty: find Chrome or Edge.</source>
        <translation>要使用的浏览器；留空则自动查找 Chrome 或 Edge。</translation>
    </message>
    <message>
        <source>Browser channel</source>
        <translation>浏览器渠道</translation>
    </message>
    <message>
        <source>Which installed browser to use (chrome, msedge).</source>
        <translation>使用哪个已安装的浏览器（chrome、msedge）。</translation>
    </message>
    <message>
        <source>Hide browser windows</source>
        <translation>隐藏浏览器窗口</translation>
    </message>
    <message>
        <source>Run browsers without showing their windows.</source>
        <translation>运行浏览器时不显示窗口。</translation>
    </message>
    <message>
        <source>Extra browser arguments</source>
        <translation>额外浏览器参数</translation>
    </message>
    <message>
        <source>Command-line switches passed to the browser.</source>
        <translation>传给浏览器的命令行参数。</translation>
    </message>
    <message>
        <source>Host resolver rules</source>
        <translation>主机解析规则</translation>
    </message>
    <message>
        <source>For testing: send site names to other addresses.</source>
        <translation>测试用：把站点域名解析到其他地址。</translation>
    </message>
    <message>
        <source>Database file</source>
        <translation>数据库文件</translation>
    </message>
    <message>
        <source>The SQLite file holding the queue and history.</source>
        <translation>保存队列和历史的 SQLite 文件。</translation>
    </message>
    <message>
        <source>Shared queue address</source>
        <translation>共享队列地址</translation>
    </message>
    <message>
        <source>A Redis address shared by several computers; empty: this computer only.</source>
        <translation>多台电脑共用的 Redis 地址；留空则只用本机。</translation>
    </message>
    <message>
        <source>Shared queue name prefix</source>
        <translation>共享队列名称前缀</translation>
    </message>
    <message>
        <source>Keeps several fleets apart on one Redis.</source>
        <translation>在同一个 Redis 上区分多个集群。</translation>
    </message>
    <message>
        <source>Write safety</source>
        <translation>写入安全级别</translation>
    </message>
    <message>
        <source>How carefully each write reaches the disk (FULL is safest).</source>
        <translation>每次写入落盘的谨慎程度（FULL 最安全）。</translation>
    </message>
    <message>
        <source>Writes per commit</source>
        <translation>每次提交的写入数</translation>
    </message>
    <message>
        <source>How many writes are saved together.</source>
        <translation>多少次写入一起保存。</translation>
    </message>
    <message>
        <source>Wait for a busy database (seconds)</source>
        <translation>数据库忙时等待（秒）</translation>
    </message>
    <message>
        <source>How long to wait when another program holds the database.</source>
        <translation>其他程序占用数据库时等待多久。</translation>
    </message>
    <message>
        <source>deadline</source>
        <translation>截止</translation>
    </message>
    <message>
        <source>score</source>
        <translation>分数</translation>
    </message>
    <message>
        <source>attempts</source>
        <translation>尝试</translation>
    </message>
    <message>
        <source>waited</source>
        <translation>已等待</translation>
    </message>
    <message>
        <source>step</source>
        <translation>步骤</translation>
    </message>
    <message>
        <source>open for</source>
        <translation>已打开</translation>
    </message>
    <message>
        <source>signature</source>
        <translation>特征</translation>
    </message>
    <message>
        <source>System</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>%1 recent failures</source>
        <translation>近期失败 %1 次</translation>
    </message>
    <message>
        <source>The task failed (%1)</source>
        <translation>任务失败（%1）</translation>
    </message>
    <message>
        <source>All sites (global)</source>
        <translation>所有站点（全局）</translation>
    </message>
    <message>
        <source>proxy of shop %1</source>
        <translation>店铺 %1 的代理</translation>
    </message>
    <message>
        <source>%1s</source>
        <translation>%1秒</translation>
    </message>
    <message>
        <source>%1m %2s</source>
        <translation>%1分%2秒</translation>
    </message>
    <message>
        <source>%1h %2m</source>
        <translation>%1小时%2分</translation>
    </message>
    <message>
        <source>%1d %2h</source>
        <translation>%1天%2小时</translation>
    </message>
    <message>
        <source>%1 rows</source>
        <translation>%1 条</translation>
    </message>
    <message>
        <source>a changed page layout</source>
        <translation>页面改版</translation>
    </message>
    <message>
        <source>a CAPTCHA</source>
        <translation>验证码</translation>
    </message>
    <message>
        <source>crashing pages</source>
        <translation>页面崩溃</translation>
    </message>
    <message>
        <source>server errors</source>
        <translation>服务器错误</translation>
    </message>
    <message>
        <source>rate limiting</source>
        <translation>速率限制</translation>
    </message>
    <message>
        <source>Demo: the practice site now shows %1 on %2</source>
        <translation>演示：练习网站的 %2 现在出现%1</translation>
    </message>
    <message>
        <source>Demo tasks</source>
        <translation>演示任务</translation>
    </message>
    <message>
        <source> — demo</source>
        <translation> — 演示</translation>
    </message>
    <message>
        <source>Schedule</source>
        <translation>定时任务</translation>
    </message>
    <message>
        <source>(no longer valid)</source>
        <translation>（已失效）</translation>
    </message>
    <message>
        <source>Next runs</source>
        <translation>下次运行</translation>
    </message>
    <message>
        <source>Last run</source>
        <translation>上次运行</translation>
    </message>
    <message>
        <source>Last error</source>
        <translation>上次错误</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Run now</source>
        <translation>立即运行</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>schedule %1 paused</source>
        <translation>定时任务 %1 已暂停</translation>
    </message>
    <message>
        <source>schedule %1 resumed</source>
        <translation>定时任务 %1 已恢复</translation>
    </message>
    <message>
        <source>schedule %1 ran now: %2 task(s)</source>
        <translation>定时任务 %1 已立即运行：%2 个任务</translation>
    </message>
    <message>
        <source>schedule %1 deleted</source>
        <translation>定时任务 %1 已删除</translation>
    </message>
    <message>
        <source>type, e.g. collect_data</source>
        <translation>任务类型，如 collect_data</translation>
    </message>
    <message>
        <source>shops, e.g. "platform:pdd"</source>
        <translation>店铺，如 "platform:pdd"</translation>
    </message>
    <message>
        <source>since YYYY-MM-DD</source>
        <translation>起始日期 YYYY-MM-DD</translation>
    </message>
    <message>
        <source>until YYYY-MM-DD</source>
        <translation>截止日期 YYYY-MM-DD</translation>
    </message>
    <message>
        <source>flow</source>
        <translation>流程</translation>
    </message>
    <message>
        <source>search the records (中文 too)</source>
        <translation>搜索结果（支持中文）</translation>
    </message>
    <message>
        <source>one sheet per type</source>
        <translation>每种类型一个工作表</translation>
    </message>
    <message>
        <source>one sheet</source>
        <translation>单个工作表</translation>
    </message>
    <message>
        <source>one sheet per shop</source>
        <translation>每个店铺一个工作表</translation>
    </message>
    <message>
        <source>XLSX only: CSV and JSON Lines are one table</source>
        <translation>仅限 XLSX：CSV 和 JSON Lines 只有一张表</translation>
    </message>
    <message>
        <source>Preview</source>
        <translation>预览</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>导出…</translation>
    </message>
    <message>
        <source>format</source>
        <translation>格式</translation>
    </message>
    <message>
        <source>sheet per</source>
        <translation>分表依据</translation>
    </message>
    <message>
        <source>%1 records shown</source>
        <translation>显示 %1 条记录</translation>
    </message>
    <message>
        <source>no records</source>
        <translation>没有记录</translation>
    </message>
    <message>
        <source>%1 records written to %2</source>
        <translation>已导出 %1 条记录到 %2</translation>
    </message>
    <message>
        <source>Export results</source>
        <translation>导出采集结果</translation>
    </message>
    <message>
        <source>search (中文 too), Enter</source>
        <translation>搜索（支持中文），回车</translation>
    </message>
    <message>
        <source>%1 found</source>
        <translation>找到 %1 条</translation>
    </message>
    <message>
        <source>nothing found</source>
        <translation>没有找到</translation>
    </message>
    <message>
        <source>Notifications failing: %1</source>
        <translation>通知发送失败：%1</translation>
    </message>
    <message>
        <source>Edit rule #%1</source>
        <translation>编辑规则 #%1</translation>
    </message>
    <message>
        <source> min</source>
        <translation> 分钟</translation>
    </message>
    <message>
        <source>Now</source>
        <translation>当前</translation>
    </message>
    <message>
        <source>Retry after</source>
        <translation>重试间隔</translation>
    </message>
    <message>
        <source>After saving</source>
        <translation>保存后</translation>
    </message>
    <message>
        <source>The rule will %1.</source>
        <translation>该规则将%1。</translation>
    </message>
    <message>
        <source>Saved as: %1</source>
        <translation>保存为：%1</translation>
    </message>
    <message>
        <source>Closing the browser of %1: saving its session…</source>
        <translation>正在关闭 %1 的浏览器：保存会话……</translation>
    </message>
    <message>
        <source>ticket #%1</source>
        <translation>工单 #%1</translation>
    </message>
    <message>
        <source>Opening the shop's browser for %1; close it when you are done</source>
        <translation>正在为 %1 打开店铺浏览器；完成后请关闭它</translation>
    </message>
    <message>
        <source>Browser of %1 closed, its session saved</source>
        <translation>%1 的浏览器已关闭，会话已保存</translation>
    </message>
</context>
</TS>