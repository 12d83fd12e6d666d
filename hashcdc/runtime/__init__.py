"""Where the work runs.

The project and its Spark session, the metastore (embedded or shared), the JVM's jars
and class archive, Hadoop files, the cluster, table locks, and the profile.
"""
