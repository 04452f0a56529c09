<?xml version='1.0' encoding='utf-8'?>
<TS version="2.1" language="zh_CN">
<context>
    <name />
    <message>
        <source>%1: %2</source>
        <translation>%1：%2</translation>
    </message>
    <message>
        <source>%1 was refused.</source>
        <translation>%1 被拒绝。</translation>
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
        <source>Message</source>
        <translation>信息</translation>
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
        <source>Domain</source>
        <translation>域名</translation>
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
        <source>Domain paused</source>
        <translation>域名已暂停</translation>
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
        <source>Worker</source>
        <translation>工作节点</translation>
    </message>
    <message>
        <source>this console</source>
        <translation>本控制台</translation>
    </message>
    <message>
        <source>elsewhere</source>
        <translation>其他节点</translation>
    </message>
    <message>
        <source>%1 ago</source>
        <translation>%1 前</translation>
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
        <source>Waiting for a person</source>
        <translation>等待人工</translation>
    </message>
    <message>
        <source>Gate</source>
        <translation>闸门</translation>
    </message>
    <message>
        <source>global</source>
        <translation>全局</translation>
    </message>
    <message>
        <source>Rate /s</source>
        <translation>速率 /秒</translation>
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
        <source>browser pool</source>
        <translation>浏览器池</translation>
    </message>
    <message>
        <source>Recent failures</source>
        <translation>近期失败</translation>
    </message>
    <message>
        <source>Trips</source>
        <translation>断开次数</translation>
    </message>
    <message>
        <source>Next probe</source>
        <translation>下次探测</translation>
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
        <source>suspended</source>
        <translation>已挂起</translation>
    </message>
    <message>
        <source>waiting_human</source>
        <translation>等待人工</translation>
    </message>
    <message>
        <source>quarantined</source>
        <translation>已隔离</translation>
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
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>open</source>
        <translation>断开</translation>
    </message>
    <message>
        <source>closed</source>
        <translation>闭合</translation>
    </message>
    <message>
        <source>half_open</source>
        <translation>半开</translation>
    </message>
    <message>
        <source>retry</source>
        <translation>重试</translation>
    </message>
    <message>
        <source>resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>skip</source>
        <translation>跳过</translation>
    </message>
    <message>
        <source>todo</source>
        <translation>待做</translation>
    </message>
    <message>
        <source>current</source>
        <translation>当前</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
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
        <source>human</source>
        <translation>转人工</translation>
    </message>
    <message>
        <source>retry_later</source>
        <translation>稍后重试</translation>
    </message>
    <message>
        <source>alive</source>
        <translation>在线</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>lost</source>
        <translation>失联</translation>
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
        <source>Gate levels (tokens / burst)</source>
        <translation>闸门水位（令牌 / 突发容量）</translation>
    </message>
    <message>
        <source>probe in %1s</source>
        <translation>%1 秒后探测</translation>
    </message>
    <message>
        <source>Breakers</source>
        <translation>熔断器</translation>
    </message>
    <message>
        <source>all closed</source>
        <translation>全部闭合</translation>
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
        <source>Gate rate</source>
        <translation>闸门速率</translation>
    </message>
    <message>
        <source>Requests per second</source>
        <translation>每秒请求数</translation>
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
        <source>Configuration file</source>
        <translation>配置文件</translation>
    </message>
    <message>
        <source>Changes to the configuration apply when the console starts again; gate rates and breakers change live from the Gates tab.</source>
        <translation>配置修改在控制台重启后生效；限速闸门和熔断器可在“闸门与熔断器”页实时修改。</translation>
    </message>
    <message>
        <source>General</source>
        <translation>常规</translation>
    </message>
    <message>
        <source>gates (TOML)</source>
        <translation>闸门（TOML）</translation>
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
        <translation>%1 后</translation>
    </message>
    <message>
        <source>%1 late</source>
        <translation>已超时 %1</translation>
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
        <source>Cancel: drop the task</source>
        <translation>取消：放弃该任务</translation>
    </message>
    <message>
        <source>Ticket #%1 — task #%2</source>
        <translation>工单 #%1 — 任务 #%2</translation>
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
        <source>A note for the knowledge base (what you saw, what you did)</source>
        <translation>给知识库的备注（看到了什么，做了什么）</translation>
    </message>
    <message>
        <source>Make this a rule: answer such failures this way without a ticket</source>
        <translation>设为规则：以后同类失败自动这样处理，不再开工单</translation>
    </message>
    <message>
        <source>%1: done</source>
        <translation>%1：完成</translation>
    </message>
    <message>
        <source>Engine problem: %1</source>
        <translation>引擎问题：%1</translation>
    </message>
    <message>
        <source>queued %1 · running %2/%3 · tickets %4 · done/min %5 · failed/min %6 · oldest wait %7</source>
        <translation>排队 %1 · 运行 %2/%3 · 工单 %4 · 完成/分 %5 · 失败/分 %6 · 最长等待 %7</translation>
    </message>
    <message>
        <source>breaker open: %1</source>
        <translation>熔断器断开：%1</translation>
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
        <source>Breaker open</source>
        <translation>熔断器已断开</translation>
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
        <source>Gates &amp; breakers</source>
        <translation>闸门与熔断器</translation>
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
        <source>Bump…</source>
        <translation>调整优先级…</translation>
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
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Cancel the selected tasks</source>
        <translation>取消选中的任务</translation>
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
        <source>Release</source>
        <translation>释放</translation>
    </message>
    <message>
        <source>Requeue the selected quarantined tasks</source>
        <translation>将选中的隔离任务重新排队</translation>
    </message>
    <message>
        <source>Answer ticket…</source>
        <translation>处理工单…</translation>
    </message>
    <message>
        <source>Answer the selected ticket</source>
        <translation>处理选中的工单</translation>
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
        <source>Pause domain</source>
        <translation>暂停域名</translation>
    </message>
    <message>
        <source>Stop starting tasks on the selected shop's site</source>
        <translation>停止启动选中店铺所在站点的任务</translation>
    </message>
    <message>
        <source>Resume domain</source>
        <translation>恢复域名</translation>
    </message>
    <message>
        <source>Start tasks on the selected shop's site again</source>
        <translation>恢复选中店铺所在站点的任务</translation>
    </message>
    <message>
        <source>Gate rate…</source>
        <translation>闸门速率…</translation>
    </message>
    <message>
        <source>Change a rate gate</source>
        <translation>修改限速闸门</translation>
    </message>
    <message>
        <source>Open breaker</source>
        <translation>断开熔断器</translation>
    </message>
    <message>
        <source>Stop a site's tasks by hand</source>
        <translation>手动停止该站点的任务</translation>
    </message>
    <message>
        <source>Close breaker</source>
        <translation>闭合熔断器</translation>
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
        <source>Configuration and language</source>
        <translation>配置与语言</translation>
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
        <source>Bump</source>
        <translation>调整优先级</translation>
    </message>
    <message>
        <source>Cancel tasks</source>
        <translation>取消任务</translation>
    </message>
    <message>
        <source>Cancel %1 task(s)? Running ones stop at their next step.</source>
        <translation>取消 %1 个任务？正在运行的任务会在下一步停止。</translation>
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
        <source>Shops to add: %1.</source>
        <translation>要添加的店铺：%1。</translation>
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
</context>
</TS>